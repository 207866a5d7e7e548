"""``pyverbs.enums``: the name older pyverbs programs import; the same as :mod:`.libibverbs_enums`."""

from rdmasim.pyverbs.libibverbs_enums import *  # noqa: F403
