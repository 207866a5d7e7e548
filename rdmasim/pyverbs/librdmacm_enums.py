"""``pyverbs.librdmacm_enums``: librdmacm's enums (rdma_cma.h) under rdma-core v59's module name;
the same objects as :mod:`rdmasim.pyverbs.cm_enums`. The RDMA CM itself is not emulated."""

from rdmasim.pyverbs.cm_enums import (  # noqa: F401 (re-exported)
    RDMA_PS_IB,
    RDMA_PS_IPOIB,
    RDMA_PS_TCP,
    RDMA_PS_UDP,
    rdma_port_space,
)
