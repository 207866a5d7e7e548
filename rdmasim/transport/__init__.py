"""The transport layer's Python side: the simulation handle, hosts and links the verbs objects
use (:mod:`.handle`), NIC profiles (:mod:`.nic`), IRN's window rule (:mod:`.irn`) and the Ultra
Ethernet transport's per-flow options (:mod:`.uet`). The verbs objects themselves are
:mod:`rdmasim.verbs`, in the same layer (docs/design.md, "Layers").
"""
