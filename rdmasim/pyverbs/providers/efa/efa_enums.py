"""``pyverbs.providers.efa.efa_enums``: EFA names rdma-core's test helpers use (efadv.h values)."""

from __future__ import annotations

from enum import IntEnum
from typing import Any

from rdmasim.pyverbs import _enum_merge, _enum_values

efadv_qp_driver_type: Any = IntEnum("efadv_qp_driver_type", {"EFADV_QP_DRIVER_TYPE_SRD": 0})
EFADV_QP_DRIVER_TYPE_SRD = efadv_qp_driver_type.EFADV_QP_DRIVER_TYPE_SRD

# every other name of rdma-core's efa_enums (efadv.h's values)
_enum_merge.complete(globals(), _enum_values.EFA, _enum_values.EFA_ALIASES)
