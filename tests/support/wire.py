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
