"""Reading what a test captured: 24-bit PSN arithmetic, the local ACK timeout and decoded frames.

``Pkt`` is one frame of ``rdmasim.capture.read_pcap``: ``t`` (ns, when the sender started
transmitting it) and the codec's fields, also as attributes (``p.psn``, ``p.opcode``, ...).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

PSN_MOD = 1 << 24


def psn_add(psn: int, n: int) -> int:
    """``psn + n`` modulo 2^24."""
    return (psn + n) % PSN_MOD


def psn_diff(a: int, b: int) -> int:
    """a - b in 24-bit serial arithmetic (signed, half space)."""
    d = (a - b) % PSN_MOD
    return d - PSN_MOD if d >= PSN_MOD // 2 else d


def timeout_ns(code: int) -> float:
    """Local ACK timeout: 4.096 us * 2^timeout."""
    return 4096.0 * (1 << code)


@dataclass
class Pkt:
    t: int  # ns, when the sender started transmitting it
    f: dict[str, Any]

    def __getattr__(self, name: str) -> Any:
        try:
            return self.__dict__["f"][name]
        except KeyError:
            raise AttributeError(name) from None


class Op:
    """RC BTH opcodes (IBA 9.2, protocol.md 1.5)."""

    SEND_FIRST, SEND_MIDDLE, SEND_LAST, SEND_LAST_IMM, SEND_ONLY, SEND_ONLY_IMM = range(0x00, 0x06)
    WRITE_FIRST, WRITE_MIDDLE, WRITE_LAST, WRITE_LAST_IMM, WRITE_ONLY, WRITE_ONLY_IMM = range(0x06, 0x0C)
    READ_REQ, READ_FIRST, READ_MIDDLE, READ_LAST, READ_ONLY = range(0x0C, 0x11)
    ACK, ATOMIC_ACK, CMP_SWAP, FETCH_ADD = range(0x11, 0x15)


class Syn:
    """AETH syndromes (IBA 9.3.5): ACK, and the NAK codes."""

    ACK = 0x1F
    NAK_SEQ, NAK_INV, NAK_ACC, NAK_OP = range(0x60, 0x64)
