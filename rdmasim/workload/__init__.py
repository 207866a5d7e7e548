"""The workload layer: bulk flows run as QP pairs in C (:mod:`.flows`, ``Simulator.add_flows``)
and the traffic that makes their tables (:mod:`.traffic`: generators, collectives, HPC patterns).
Users import them as ``rdmasim.flows`` and ``rdmasim.traffic`` (docs/design.md, "Layers").
"""
