"""``pyverbs.srq``: shared receive queues. Not emulated yet: this module holds no SRQ, so
``from pyverbs.srq import SRQ`` fails with ImportError (as on a pyverbs without it)."""

__all__: list[str] = []
