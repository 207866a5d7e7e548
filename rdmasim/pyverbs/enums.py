"""``pyverbs.enums``: the name older pyverbs programs import; the same as :mod:`.libibverbs_enums`."""

from rdmasim.pyverbs.libibverbs_enums import *  # noqa: F403
from rdmasim.pyverbs.libibverbs_enums import (  # noqa: F401 (underscored: not in import *)
    _IBV_DEVICE_PCI_WRITE_END_PADDING,
    _IBV_DEVICE_RAW_SCATTER_FCS,
)
