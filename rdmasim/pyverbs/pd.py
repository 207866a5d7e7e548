"""``pyverbs.pd``: protection domains (rdmasim.verbs' PD)."""

from rdmasim.verbs.device import PD

__all__ = ["PD"]
