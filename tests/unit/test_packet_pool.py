"""The packet pool (csrc/codec/pool.c) hands out packets whose common fields are zero whatever
their slots held before (the transport extension blocks after them, the UET header, are left to
their builders):
the profiles below write what the transport and the codec write into packets of each kind
(atomics, PFC frames, responder jobs and IRN metadata included), and slots are reused last in,
first out.  The pool's steady state (``churn``) keeps memory at the packets in flight."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from rdmasim import _core

OP_WRITE_ONLY, OP_ACK, OP_ATOMIC_ACK, OP_CMP_SWAP, OP_FETCH_ADD = 0x0A, 0x11, 0x12, 0x13, 0x14
KIND_ROCE, KIND_PFC, KIND_JOB = 0, 1, 2

# profile -> fields that kind of packet sets (values drawn below)
PROFILES: dict[str, dict[str, object]] = {
    "write": {"kind": KIND_ROCE, "opcode": OP_WRITE_ONLY, "psn": None, "reth_va": None, "reth_len": None},
    "ack": {"kind": KIND_ROCE, "opcode": OP_ACK, "aeth_syndrome": None, "aeth_msn": None},
    "cmp_swap": {"kind": KIND_ROCE, "opcode": OP_CMP_SWAP, "atomic_va": None, "atomic_rkey": None,
                 "atomic_swap_add": None, "atomic_compare": None},
    "fetch_add": {"kind": KIND_ROCE, "opcode": OP_FETCH_ADD, "atomic_va": None, "atomic_swap_add": None},
    "atomic_ack": {"kind": KIND_ROCE, "opcode": OP_ATOMIC_ACK, "atomic_orig": None},
    "pfc": {"kind": KIND_PFC, "pfc_class_enable": None},
    "job": {"kind": KIND_JOB, "job_res": None},
    "irn_data": {"kind": KIND_ROCE, "opcode": OP_WRITE_ONLY, "x_valid": 1, "x_off": None, "x_va": None,
                 "x_rkey": None, "x_len": None, "x_seq": None},
    "irn_nak": {"kind": KIND_ROCE, "opcode": OP_ACK, "x_valid": 1, "x_sack_psn": None},
}
LIMIT = {"pfc_class_enable": 0xFF, "aeth_syndrome": 0xFF, "psn": 0xFFFFFF, "aeth_msn": 0xFFFFFF}


@st.composite
def operations(draw: st.DrawFn) -> list[tuple[str, object]]:
    """("alloc", fields): a packet built as one kind (a packet never changes kind once built);
    ("release", n): release one of the held packets."""
    ops: list[tuple[str, object]] = []
    for _ in range(draw(st.integers(1, 60))):
        if draw(st.booleans()):
            profile = draw(st.sampled_from(sorted(PROFILES)))
            fields = {k: (v if v is not None else draw(st.integers(1, LIMIT.get(k, 0xFFFFFFFF))))
                      for k, v in PROFILES[profile].items()}
            ops.append(("alloc", fields))
        else:
            ops.append(("release", draw(st.integers(0, 1000))))
    return ops


@settings(max_examples=200, deadline=None)
@given(operations())
def test_every_allocated_packet_has_zero_common_fields(ops) -> None:
    pool = _core.PacketPoolForTest()
    held: list[int] = []
    for kind, arg in ops:
        if kind == "alloc":
            h = pool.alloc()
            assert pool.zero_bytes(h) == pool.common, "a reused packet kept bytes of its last use"
            pool.set(h, **arg)
            held.append(h)
        elif held:
            pool.release(held.pop(arg % len(held)))
    assert pool.in_use == len(held)


def test_churn_reuses_slots_and_returns_every_packet() -> None:
    pool = _core.PacketPoolForTest()
    pool.churn(200_000, 1_000)
    assert pool.in_use == 0
    assert 1_000 <= pool.allocated < 2_100  # slab chunks double: memory follows the packets out
    pool.churn(200_000, 10)
    assert pool.allocated < 2_100
    h = pool.alloc()
    assert pool.zero_bytes(h) == pool.common


def test_alloc_clears_the_common_fields_and_leaves_the_uet_block_to_its_builder() -> None:
    """RoCE packets never read the UET header: clearing it on every allocation cost RoCE runs
    instructions per packet (docs/design.md).  The UET frame builder clears it itself."""
    pool = _core.PacketPoolForTest()
    assert 0 < pool.common < pool.size
    h = pool.alloc()
    pool.poison_extensions(h, 0xA5)
    pool.release(h)
    h = pool.alloc()  # the same slot (last in, first out)
    assert pool.zero_bytes(h) == pool.common
    assert pool.byte_count(h, 0xA5) == pool.size - pool.common
