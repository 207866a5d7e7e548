"""``pyverbs.pd``: protection domains (rdmasim.verbs' PD) and parent domains.

A parent domain (``ibv_alloc_parent_domain``) is provider-specific; rxe's provider does not
implement it, so ``ParentDomain`` raises ``PyverbsRDMAError`` with EOPNOTSUPP, as on rxe. Its
attribute classes hold values."""

from rdmasim.pyverbs._attrs import attr_class
from rdmasim.pyverbs._unsupported import unsupported
from rdmasim.verbs.device import PD

__all__ = ["PD", "ParentDomain", "ParentDomainContext", "ParentDomainInitAttr"]

ParentDomainContext = attr_class("ParentDomainContext", __name__,
                                 "The allocator callbacks of a parent domain.",
                                 [("pd", None), ("alloc_func", None), ("free_func", None),
                                  ("user_data", None)])
ParentDomainInitAttr = attr_class("ParentDomainInitAttr", __name__, "``ibv_parent_domain_init_attr``.",
                                  [("pd", None), ("pd_context", None)])
ParentDomain = unsupported("ParentDomain", "parent domains (ibv_alloc_parent_domain) are not "
                           "supported by the emulated device (nor by rxe's provider)", __name__)
