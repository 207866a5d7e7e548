"""``pyverbs.flow``: steering flows (``ibv_create_flow``). The emulated device, like rxe, has no
flow steering: ``Flow`` raises ``PyverbsRDMAError`` with EOPNOTSUPP. ``FlowAttr`` holds values."""

from __future__ import annotations

from rdmasim.pyverbs import libibverbs_enums as _e
from rdmasim.pyverbs._attrs import attr_class
from rdmasim.pyverbs._unsupported import unsupported

__all__ = ["Flow", "FlowAction", "FlowAttr"]

_WHY = "flow steering (ibv_create_flow) is not supported by the emulated device (nor by rxe)"
FlowAttr = attr_class("FlowAttr", __name__, "``ibv_flow_attr``.",
                      [("num_of_specs", 0), ("flow_type", int(_e.IBV_FLOW_ATTR_NORMAL)), ("priority", 0),
                       ("port", 1), ("flags", 0)])
Flow = unsupported("Flow", _WHY, __name__)
FlowAction = unsupported("FlowAction", _WHY, __name__)
