"""Hypothesis strategies for rdmasim scenarios. Every strategy lists its simplest case first, so
failures shrink to small readable counterexamples (one WRITE on two hosts, no loss, defaults)."""

from __future__ import annotations

from hypothesis import strategies as st

from rdmasim.cc import DcqcnParams
from rdmasim.testing.runner import Impairment, Op, Params, Scenario

MTUS = (1024, 256, 512, 2048, 4096)


def sizes(mtu: int = 1024, max_packets: int = 4) -> st.SearchStrategy[int]:
    """Message sizes around packet boundaries: k*mtu + {-1, 0, +1}, 0, 1, or anything small."""
    return st.one_of(
        st.builds(lambda k, d: max(k * mtu + d, 0), st.integers(1, max_packets), st.sampled_from((0, -1, 1))),
        st.sampled_from((1, 0)),
        st.integers(0, max_packets * mtu),
    )


def psn_starts() -> st.SearchStrategy[int]:
    """First PSNs: 0, just below the 2^24 wrap, or any."""
    return st.one_of(st.just(0), st.integers(1, 64).map(lambda k: 2**24 - k), st.integers(0, 2**24 - 1))


def ops(mtu: int = 1024, invalid_keys: bool = True) -> st.SearchStrategy[Op]:
    """One send WR: WRITE / READ / SEND / FETCH_ADD / CMP_SWAP, maybe unsignaled, maybe a bad rkey."""
    kind = st.sampled_from(("WRITE", "READ", "SEND", "FADD", "CSWAP"))
    bad = st.booleans() if invalid_keys else st.just(False)
    return st.builds(
        lambda k, s, b, sig: Op(
            k, s if k in ("WRITE", "READ", "SEND") else 8, b and k in ("WRITE", "READ"), sig
        ),
        kind,
        sizes(mtu),
        bad,
        st.booleans().map(lambda x: not x),
    )


def workloads(
    mtu: int = 1024, max_ops: int = 5, invalid_keys: bool = True
) -> st.SearchStrategy[tuple[Op, ...]]:
    """A sequence of 1..max_ops send WRs."""
    return st.lists(ops(mtu, invalid_keys), min_size=1, max_size=max_ops).map(tuple)


def impairments(max_loss: float = 0.05) -> st.SearchStrategy[Impairment]:
    """No loss, i.i.d. loss either way, bursty Gilbert-Elliott loss, or explicit drops of chosen PSNs."""
    loss = st.sampled_from((0.01, max_loss))
    return st.one_of(
        st.just(Impairment()),
        st.builds(Impairment, loss=loss, ack_loss=st.sampled_from((0.0, 0.01))),
        st.builds(
            lambda gb, bg: Impairment(gilbert=(gb, bg, 0.0, 1.0)),
            st.sampled_from((0.01, 0.05)),
            st.sampled_from((0.5, 0.3)),
        ),
        st.builds(
            Impairment,
            drop_psns=st.lists(st.integers(0, 12), min_size=1, max_size=3, unique=True).map(
                lambda x: tuple(sorted(x))
            ),
        ),
    )


def dcqcn_params() -> st.SearchStrategy[DcqcnParams | None]:
    """No congestion control, the paper's DCQCN or NVIDIA's, with a few knobs varied."""
    return st.one_of(
        st.none(),
        st.builds(
            lambda itv, mn: DcqcnParams.nvidia(min_time_between_cnps=itv, rpg_min_rate=mn),
            st.sampled_from((4, 1, 10)),
            st.sampled_from((1, 1000, 10000)),
        ),
        st.just(DcqcnParams.paper()),
    )


def params(fabric: bool = False) -> st.SearchStrategy[Params]:
    """Protocol parameters; ``fabric`` adds switch PFC/ECN settings and DCQCN."""
    base = dict(
        mtu=st.sampled_from(MTUS),
        timeout=st.sampled_from((8, 4, 12)),
        retry_cnt=st.just(7),
        rnr_retry=st.sampled_from((7, 3)),
        psn=psn_starts(),
    )
    if fabric:
        base.update(
            threshold=st.sampled_from(("dynamic", "16KB", "64KB")),
            lossless=st.sampled_from(((3,), ())),
            ecn=st.sampled_from((None, {"kmin": "5KB", "kmax": "50KB", "pmax": 0.5})),
            lossy_limit=st.sampled_from((None, "32KB")),
            dcqcn=dcqcn_params(),
        )
    return st.builds(Params, **base)


@st.composite
def scenarios(
    draw: st.DrawFn,
    topologies: tuple[str, ...] = ("back_to_back", "star", "dumbbell"),
    max_ops: int = 4,
    invalid_keys: bool = True,
    lossy: bool = True,
) -> Scenario:
    """A whole scenario: a small fabric (back_to_back, a 2-4 host star/incast, a dumbbell), a workload
    on every pair, impairments and parameters."""
    topo = draw(st.sampled_from(topologies))
    p = draw(params(fabric=topo != "back_to_back"))
    return Scenario(
        topology=topo,
        hosts=draw(st.integers(2, 4)) if topo != "back_to_back" else 2,
        ops=draw(workloads(p.mtu, max_ops, invalid_keys)),
        impairment=draw(impairments()) if lossy else Impairment(),
        params=p,
        seed=draw(st.integers(0, 1000)),
    )
