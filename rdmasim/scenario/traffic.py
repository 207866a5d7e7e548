"""A scenario's traffic as one :class:`~rdmasim.traffic.FlowTable`: explicit ``[[flows]]`` first,
then each ``[traffic.*]`` generator in :data:`~rdmasim.scenario.load.GENERATORS` order.

Hosts in the table are positions in :func:`~rdmasim.scenario.load.host_names` (the builder's
naming order); :func:`run_scenario` maps them to the simulator's host indices. Generator errors
(e.g. halving-doubling on 6 hosts, an unreadable CSV) become :class:`ScenarioError` problems
naming the generator's table.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from rdmasim.scenario.model import Problem, Scenario, ScenarioError, host_names
from rdmasim.workload import traffic as tr

_CDFS = {"web_search": tr.WEB_SEARCH, "data_mining": tr.DATA_MINING}


def _size_cdf(sc: Scenario) -> tr.SizeCDF:
    name = sc.values["traffic.poisson.cdf"]
    if name in _CDFS:
        return _CDFS[name]
    path = Path(name)
    if not path.is_absolute() and sc.file and not sc.file.startswith("<"):
        path = Path(sc.file).parent / path
    allowed = "'web_search', 'data_mining' or a CSV file of size,cdf rows"
    try:
        cdf = tr.SizeCDF.from_csv(path)
    except (OSError, ValueError) as exc:
        raise ScenarioError(
            [Problem(sc.file, "traffic.poisson.cdf", f"cannot use as a size distribution: {exc}", name,
                     allowed)]
        ) from None
    mean = cdf.mean()
    if not mean >= 1.0:  # the arrival rate is load / mean size
        raise ScenarioError([Problem(sc.file, "traffic.poisson.cdf",
                                     f"{path}: the mean flow size is {mean:g} bytes", name,
                                     allowed + " with a mean of at least 1 byte")])
    return cdf


def _generator(sc: Scenario, gen: str, names: list[str], index: dict[str, int]) -> tr.FlowTable:
    v = sc.values
    p = f"traffic.{gen}."
    seed = v["simulation.seed"]

    def hosts() -> list[int]:
        return [index[h] for h in (v[p + "hosts"] or names)]

    if gen == "incast":
        rx = v[p + "receiver"] or names[-1]
        senders = v[p + "senders"] or [h for h in names if h != rx]
        return tr.incast([index[s] for s in senders], index[rx], v[p + "size"], start=v[p + "start"],
                         verb=v[p + "verb"], priority=v[p + "priority"])
    if gen == "permutation":
        return tr.permutation(hosts(), v[p + "size"], seed=seed, start=v[p + "start"], verb=v[p + "verb"],
                              priority=v[p + "priority"])
    if gen == "all_to_all":
        return tr.all_to_all(hosts(), v[p + "size"], start=v[p + "start"], stagger_ps=v[p + "stagger"],
                             verb=v[p + "verb"], priority=v[p + "priority"])
    if gen == "poisson":
        # a stream of its own so adding a generator does not reshuffle the others
        return tr.poisson(hosts(), v[p + "load"], v["link.rate"], v[p + "duration"], _size_cdf(sc),
                          seed=seed * 1_000_003 + 7, start=v[p + "start"], verb=v[p + "verb"],
                          priority=v[p + "priority"])
    if gen == "halo":
        ranks = v[p + "hosts"] or names
        slow = _stragglers(sc)
        comp = tr.Compute(v[p + "compute"], v[p + "compute_mean"], v[p + "compute_std"],
                          v[p + "compute_sigma"], seed=seed * 1_000_003 + 11)  # a stream of its own
        return tr.halo_exchange(v[p + "dims"], v[p + "face_size"], timesteps=v[p + "timesteps"],
                                periodic=v[p + "periodic"], compute=comp,
                                extra_compute={r: slow[h] for r, h in enumerate(ranks) if h in slow},
                                barrier_kind=v[p + "barrier"], barrier_size=v[p + "barrier_size"],
                                overlap=v[p + "overlap"], hosts=hosts(), start=v[p + "start"],
                                priority=v[p + "priority"], group="halo")
    table = _collective(sc, p, hosts())
    ranks = v[p + "hosts"] or names
    # each rank's compute before the collective (drawn from its own stream), plus a straggler's delay
    comp = tr.Compute(v[p + "compute"], v[p + "compute_mean"], v[p + "compute_std"], v[p + "compute_sigma"],
                      seed=seed * 1_000_003 + 13)
    delay = dict(zip(ranks, comp.draw(1, len(ranks))[0].tolist(), strict=True))
    for h, extra in _stragglers(sc).items():
        if h in delay:
            delay[h] += extra
    delays = {index[h]: d for h, d in delay.items() if d}
    return tr.with_compute(table, delays) if delays else table


def _stragglers(sc: Scenario) -> dict[str, int]:
    """[[impairments.stragglers]]: host name -> its extra compute (ps)."""
    return {r["host"]: r["delay"] for r in sc.arrays.get("impairments.stragglers", [])}


def _collective(sc: Scenario, p: str, hosts: list[int]) -> tr.FlowTable:
    v = sc.values
    kind = v[p + "kind"]
    common: dict[str, Any] = {"start": v[p + "start"], "priority": v[p + "priority"]}
    gpus = v[p + "gpus_per_node"]
    if gpus > 1 and kind != "allreduce":
        raise ScenarioError([Problem(sc.file, p + "gpus_per_node",
                                     f"applies only to kind 'allreduce', not {kind!r}", gpus,
                                     "1 for this kind")])
    if kind == "ring_allreduce":
        return tr.ring_allreduce(hosts, v[p + "size"], **common)
    if kind == "halving_doubling_allreduce":
        return tr.halving_doubling_allreduce(hosts, v[p + "size"], **common)
    if kind == "moe_all_to_all":
        return tr.moe_all_to_all(hosts, v[p + "size"], rounds=v[p + "rounds"], **common)
    algo = v[p + "algorithm"]
    if algo and algo not in tr.ALGORITHMS[kind]:
        raise ScenarioError([Problem(sc.file, p + "algorithm", f"not an algorithm of {kind}", algo,
                                     ", ".join(tr.ALGORITHMS[kind]))])
    if gpus > 1:
        return tr.hierarchical_allreduce(hosts, v[p + "size"], gpus_per_node=gpus,
                                         intra_rate=v[p + "intra_rate"], intra_latency=v[p + "intra_latency"],
                                         inter_algorithm=algo or "ring",
                                         chunk_size=v[p + "chunk_size"] or None, group=collective_label(sc),
                                         **common)
    return tr.collective(kind, hosts, v[p + "size"], algorithm=algo or None,
                         chunk_size=v[p + "chunk_size"] or None, channels=v[p + "channels"] or None,
                         inflight=v[p + "inflight"], root=v[p + "root"], group=collective_label(sc), **common)


def collective_label(sc: Scenario) -> str:
    """The group name of the ``[traffic.collective]`` flows: ``kind/algorithm`` (e.g. ``allreduce/tree``)."""
    v = sc.values
    kind = v["traffic.collective.kind"]
    if kind in ("ring_allreduce", "halving_doubling_allreduce", "moe_all_to_all"):
        return kind.replace("_", "-")
    label = f"{kind}/{v['traffic.collective.algorithm'] or tr.ALGORITHMS[kind][0]}"
    gpus = v["traffic.collective.gpus_per_node"]
    return f"{label}/hierarchical x{gpus}" if gpus > 1 else label


def collective_rows(sc: Scenario, res: np.ndarray, group: np.ndarray, groups: list[str],
                    link_rate_bps: float) -> list[dict[str, Any]]:
    """The ``[traffic.collective]`` run in nccl-tests terms: time (first start to last finish), algbw,
    busbw and busbw as a fraction of the link rate (the ideal; empty if the scenario has none or it did not
    finish)."""
    if "collective" not in sc.generators:
        return []
    v = sc.values
    label = collective_label(sc)
    if label not in groups:
        return []
    mine = group == groups.index(label)
    rows = res[mine]
    if not len(rows) or (rows["finish_ps"] < 0).any():
        return []
    kind = v["traffic.collective.kind"]
    p = len(v["traffic.collective.hosts"]) or len(host_names(v))
    size = v["traffic.collective.size"]
    if kind in ("ring_allreduce", "halving_doubling_allreduce"):
        kind = "allreduce"
    elif kind == "moe_all_to_all":  # each round is an all-to-all of size bytes per pair
        kind, size = "alltoall", size * p * v["traffic.collective.rounds"]
    t = int(rows["finish_ps"].max() - rows["start_ps"].min())
    r = tr.collective_result(kind, p, size, t)
    return [{"collective": label, "ranks": p, "size_bytes": size, "time_ps": t, "algbw_Bps": r.algbw_Bps,
             "busbw_Bps": r.busbw_Bps, "busbw_over_link_rate": r.busbw_Bps * 8 / link_rate_bps}]


def halo_rows(sc: Scenario, res: np.ndarray, group: np.ndarray, groups: list[str]) -> list[dict[str, Any]]:
    """The ``[traffic.halo]`` run: ranks, face size, timesteps, time (first start to last finish) and time
    per timestep (empty if the scenario has none or it did not finish)."""
    if "halo" not in sc.generators or "halo" not in groups:
        return []
    rows = res[group == groups.index("halo")]
    if not len(rows) or (rows["finish_ps"] < 0).any():
        return []
    v = sc.values
    t = int(rows["finish_ps"].max() - rows["start_ps"].min())
    steps = v["traffic.halo.timesteps"]
    return [{"collective": "halo", "ranks": len(v["traffic.halo.hosts"]) or len(host_names(v)),
             "dims": list(v["traffic.halo.dims"]), "size_bytes": v["traffic.halo.face_size"],
             "timesteps": steps, "time_ps": t, "time_per_step_ps": t / steps}]


def analysis(table: tr.FlowTable, res: np.ndarray, label: str, sim: Any) -> dict[str, Any]:
    """Wait per rank, bottleneck and critical path (:func:`rdmasim.traffic.analyze`) of the flows of
    group ``label`` (generators' flows are contiguous and depend only on each other); {} if none or
    unfinished."""
    if label not in table.groups:
        return {}
    rows = np.flatnonzero(table.flows["group"] == table.groups.index(label))
    if not rows.size or (res["finish_ps"][rows] < 0).any():
        return {}
    lo, hi = int(rows[0]), int(rows[-1]) + 1
    d0, d1 = int(table.dep_ptr[lo]), int(table.dep_ptr[hi])
    sub = tr.FlowTable(table.flows[lo:hi], table.dep_ptr[lo:hi + 1] - d0, table.deps[d0:d1] - lo, [label])
    a = tr.analyze(sub, res[lo:hi], sim).as_dict()
    wait = {r["host"]: r["wait_ps"] for r in a["ranks"]}
    keep = ("flow", "src", "dst", "verb", "hold_ps", "started_ps", "finish_ps", "retx_pkts", "link")
    path = [{k: s[k] for k in keep} for s in a["critical_path"]]
    for s in path:
        s["flow"] += lo  # its flow_id in the run
    return {"bottleneck": a["bottleneck"], "wait_ps": wait, "compute_by_rank": a["compute_by_rank"],
            "transfer_by_link": a["transfer_by_link"], "critical_path": path}


def traffic_table(sc: Scenario) -> tuple[tr.FlowTable, list[str]]:
    """The scenario's flows and the host names their ``src``/``dst`` positions refer to."""
    names = host_names(sc.values)
    index = {h: i for i, h in enumerate(names)}
    rows = sc.arrays.get("flows", [])
    parts: list[tr.FlowTable] = []
    if rows:
        ids = {(type(r["id"]), r["id"]): i for i, r in enumerate(rows) if "id" in r["_given"]}
        deps = [ids[(type(x), x)] for r in rows for x in (*r["after"], *r["after_received"])]
        dep_ptr = np.cumsum([0] + [len(r["after"]) + len(r["after_received"]) for r in rows])
        dep_on = [on for r in rows
                  for on in [0] * len(r["after"]) + [tr.DEP_RECEIVED] * len(r["after_received"])]
        need = [r["after_count"] for r in rows]
        parts.append(tr.FlowTable.from_columns(
            src=[index[r["src"]] for r in rows], dst=[index[r["dst"]] for r in rows],
            size=[r["size"] for r in rows], start_ps=[r["start"] for r in rows],
            verb=[r["verb"] for r in rows], priority=[r["priority"] for r in rows],
            hold_ps=[r["hold"] for r in rows], group=0, groups=["flows"], dep_ptr=dep_ptr, deps=deps,
            dep_on=dep_on if any(dep_on) else None, need=need if any(need) else None))
    problems: list[Problem] = []
    for gen in sc.generators:
        try:
            parts.append(_generator(sc, gen, names, index))
        except ScenarioError as exc:
            problems += exc.problems
        except ValueError as exc:
            problems.append(Problem(sc.file, f"traffic.{gen}", str(exc)))
    if problems:
        raise ScenarioError(problems)
    table = tr.FlowTable.concat(*parts) if parts else tr.FlowTable.empty()
    return table, names


def sim_host_indices(names: list[str], sim_hosts: dict[str, Any]) -> np.ndarray:
    """Position in ``names`` -> the simulator's host index."""
    return np.array([sim_hosts[h].index for h in names], dtype=np.int32)


__all__ = ["analysis", "collective_label", "collective_rows", "halo_rows", "sim_host_indices",
           "traffic_table"]
