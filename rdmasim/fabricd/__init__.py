"""The fabric daemon: one simulation served to several processes (C verbs programs through
``librdmasim_ibverbs.so``), and ``rdmasim exec``, which runs a program on it (docs/c-programs.md)."""
