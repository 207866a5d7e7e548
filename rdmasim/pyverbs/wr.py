"""``pyverbs.wr``: work requests and scatter/gather elements (rdmasim.verbs' classes)."""

from rdmasim.verbs.wr import SGE, RecvWR, SendWR

__all__ = ["RecvWR", "SGE", "SendWR"]
