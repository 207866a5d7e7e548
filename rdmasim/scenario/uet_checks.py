"""Warnings about a UET scenario's target buffers ([uet] target_buffer, target_access): flows the
file will make fail with a remote error completion. They run (a study of error paths may want
them), but ``validate`` and the run's summary say how many and why, naming the key."""

from __future__ import annotations

from typing import Any

import numpy as np

from rdmasim.scenario.model import Problem, Scenario
from rdmasim.workload.traffic.table import VERB_CODES

#: verbs a target_access value refuses (a WRITE or SEND places bytes; a READ reads them)
_REFUSED = {"read": ("WRITE", "SEND"), "write": ("READ",)}


def target_warnings(sc: Scenario, table: Any) -> list[Problem]:
    """One warning per key when some flows of ``table`` will end in an error completion: longer
    than ``uet.target_buffer`` (WRITE/READ: IBV_WC_REM_ACCESS_ERR, SEND: IBV_WC_REM_INV_REQ_ERR), or
    of a verb ``uet.target_access`` does not grant (IBV_WC_REM_ACCESS_ERR); [] otherwise."""
    v = sc.values
    if v["transport.kind"] != "uet":
        return []
    flows = table.flows
    moving = flows["verb"] != VERB_CODES["LOCAL"]
    out: list[Problem] = []
    limit = v["uet.target_buffer"]
    if limit:
        over = moving & (flows["size"] > limit)
        n = int(np.count_nonzero(over))
        if n:
            largest = int(flows["size"][over].max())
            out.append(Problem(sc.file, "uet.target_buffer",
                               f"{n} of {len(flows)} flows are longer than the target buffer "
                               f"(largest {largest} bytes): a WRITE or READ ends in "
                               "IBV_WC_REM_ACCESS_ERR, a SEND in IBV_WC_REM_INV_REQ_ERR", limit,
                               f"{largest} bytes or more, or 0 (as long as each flow)"))
    refused = _REFUSED.get(v["uet.target_access"], ())
    if refused:
        bad = moving & np.isin(flows["verb"], [VERB_CODES[name] for name in refused])
        n = int(np.count_nonzero(bad))
        if n:
            out.append(Problem(sc.file, "uet.target_access",
                               f"{n} of {len(flows)} flows are {'/'.join(refused)}s, which a "
                               f"{v['uet.target_access']!r} target buffer refuses: they end in "
                               "IBV_WC_REM_ACCESS_ERR", v["uet.target_access"], "'rw' for every flow to "
                               "complete"))
    return out


__all__ = ["target_warnings"]
