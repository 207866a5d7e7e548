"""The HPCC authors' ns-3 simulator (alibaba-edu/High-Precision-Congestion-Control) as a source and a
sink: :mod:`rdmasim.hpcc.inputs` reads its ``simulation/mix`` input files, :mod:`rdmasim.hpcc.translate`
turns them into an rdmasim scenario (every key that does not map is named; the config keys are read
through :mod:`rdmasim.hpcc.keys`, the congestion control is :mod:`rdmasim.hpcc.cc_map`, base RTTs
:mod:`rdmasim.hpcc.paths`, the TOML text :mod:`rdmasim.hpcc.toml_out`), and
:mod:`rdmasim.hpcc.fct` writes a results folder's flows in its ``fct.txt`` layout. The commands
(``rdmasim import hpcc``, ``rdmasim export-fct``) are in :mod:`rdmasim.hpcc.cli`; docs/import-hpcc.md
is the user page.
"""
