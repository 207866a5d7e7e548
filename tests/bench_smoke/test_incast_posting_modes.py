"""bench/models/rdmasim_incast.py posts one 1024-byte WRITE per data packet several ways (one
post_send per WR through rdmasim.verbs and rdmasim.pyverbs, next_wr chains, numpy batches): the
simulations must be identical; only the time Python takes differs."""

from __future__ import annotations

import sys
from pathlib import Path

MODELS = str(Path(__file__).resolve().parents[2] / "bench" / "models")


sys.path.insert(0, MODELS)  # bench/models: module names of its own (incast_common, ...)
import rdmasim_incast  # noqa: E402


def _simulated(result: dict) -> dict:
    """The result without what measures the Python side (wall times, memory, labels)."""
    return {k: v for k, v in result.items()
            if k not in ("label", "simulates", "mode", "peak_rss_mb", "timed")
            and "per_s" not in k and (k == "sim_time_s" or not k.endswith("_s"))}


def test_one_by_one_chain_and_batch_posting_simulate_the_same() -> None:
    modes = list(rdmasim_incast.PER_PACKET_MODES)
    assert modes == ["write1024", "write1024-chain", "write1024-batch", "write1024-pyverbs"]
    res = {m: rdmasim_incast.run(8, 300 + rdmasim_incast.CHAIN_LEN, m) for m in modes}
    ref = _simulated(res["write1024"])
    assert ref["events"] > 0 and ref["sim_time_s"] > 0
    for m in modes[1:]:
        assert _simulated(res[m]) == ref, m
    # the same packets as 1 MiB WRITEs (1024-byte payloads), in other work requests
    big = rdmasim_incast.run(8, 300 + rdmasim_incast.CHAIN_LEN, "write1MiB")
    assert big["packets"] == ref["packets"] and big["events"] < ref["events"]
