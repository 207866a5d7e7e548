"""``pyverbs.wq``: work queues and RSS indirection tables (``ibv_create_wq``,
``ibv_create_rwq_ind_table``). The emulated device, like rxe, has neither: ``WQ`` and
``RwqIndTable`` raise ``PyverbsRDMAError`` with EOPNOTSUPP. The attribute classes hold values."""

from __future__ import annotations

from rdmasim.pyverbs import libibverbs_enums as _e
from rdmasim.pyverbs._attrs import attr_class
from rdmasim.pyverbs._unsupported import unsupported

__all__ = ["WQ", "RwqIndTable", "RwqIndTableInitAttr", "RxHashConf", "WQAttr", "WQInitAttr"]

_WHY = "work queues and RSS (ibv_create_wq) are not supported by the emulated device (nor by rxe)"
WQInitAttr = attr_class("WQInitAttr", __name__, "``ibv_wq_init_attr``.",
                        [("wq_context", None), ("wq_pd", None), ("wq_cq", None),
                         ("wq_type", int(_e.IBV_WQT_RQ)), ("max_wr", 100), ("max_sge", 1), ("comp_mask", 0),
                         ("create_flags", 0)])
WQAttr = attr_class("WQAttr", __name__, "``ibv_wq_attr``.",
                    [("attr_mask", 0), ("wq_state", 0), ("curr_wq_state", 0), ("flags", 0),
                     ("flags_mask", 0)])
RwqIndTableInitAttr = attr_class("RwqIndTableInitAttr", __name__, "``ibv_rwq_ind_table_init_attr``.",
                                 [("log_ind_tbl_size", 5), ("wqs_list", None), ("comp_mask", 0)])
RxHashConf = attr_class("RxHashConf", __name__, "``ibv_rx_hash_conf``.",
                        [("rx_hash_function", 0), ("rx_hash_key_len", 0), ("rx_hash_key", None),
                         ("rx_hash_fields_mask", 0)])
WQ = unsupported("WQ", _WHY, __name__)
RwqIndTable = unsupported("RwqIndTable", _WHY, __name__)
