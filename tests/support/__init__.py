"""Setups the tests share (tests/ is on sys.path through tests/conftest.py).

- ``support.verbs_pair``: two hosts back to back with an RC, UC or UD QP pair on them
  (``VerbsPair``, ``CapturedPair``), QP pairs on any PDs (``qp_pair``), memory regions
  (``mr``, ``random_bytes``) and work requests (``write_wr``, ``send_wr``, ``recv_wr``,
  ``post_writes``) of rdmasim.verbs.
- ``support.pyverbs_pair``: the same for the rdma-core-shaped ``rdmasim.pyverbs`` namespace.

The pytest fixtures built on them live in tests/conftest.py (``fresh_pyverbs``).
"""
