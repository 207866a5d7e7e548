"""htsim (csg-htsim, the simulator of the NDP/EQDS/SMaRTT/REPS/UEC papers) as a source:
:mod:`rdmasim.htsim.cm` reads its connection matrices (``.cm`` files, the format of
``ConnectionMatrix::load`` in sim/datacenter/connection_matrix.cpp), :mod:`rdmasim.htsim.translate`
turns one, with htsim's topology options, into an rdmasim scenario (every field that does not map
is named), and :mod:`rdmasim.htsim.cli` adds ``rdmasim import htsim``. docs/import-htsim.md is the
user page.
"""
