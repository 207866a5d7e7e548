"""``pyverbs.librdmacm_enums``: librdmacm's enums (``rdma_cma.h``) under rdma-core v59's module
name, with the headers' values; the port spaces are the objects of :mod:`rdmasim.pyverbs.cm_enums`."""

from __future__ import annotations

from rdmasim.pyverbs import _enum_merge, _enum_values
from rdmasim.pyverbs.cm_enums import (  # noqa: F401 (re-exported)
    RDMA_PS_IB,
    RDMA_PS_IPOIB,
    RDMA_PS_TCP,
    RDMA_PS_UDP,
    rdma_port_space,
)

_enum_merge.complete(globals(), _enum_values.RDMACM, _enum_values.RDMACM_ALIASES)
