"""IRN's in-flight cap (docs/design.md "Loss recovery: IRN"): one rule for QPs made through the
verbs (``rdmasim.verbs.qp``) and for bulk flows (``rdmasim.flows``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rdmasim._protocols import LinkLike as Link

IRN_DEFAULT_WINDOW = 128
_ROCE_DATA_OVERHEAD = 14 + 20 + 8 + 12 + 4 + 4 + 20  # Eth, IPv4, UDP, BTH, ICRC, FCS, preamble+IFG
_ROCE_ACK_WIRE = 14 + 20 + 8 + 12 + 4 + 4 + 4 + 20


def irn_bdp_window(link: Link | None, mtu: int) -> int:
    """IRN's in-flight cap for a path over ``link``: the bandwidth-delay product in packets.

    The pipe is the round trip of one full data packet (its serialisation, twice the propagation
    delay, the ACK's serialisation) in data-packet times, plus 1/8 for the A-bit spacing (IRN
    requests an ACK every window/8 packets). Without a link: 128 (rxe's window).
    """
    if link is None:
        return IRN_DEFAULT_WINDOW
    ser = (mtu + _ROCE_DATA_OVERHEAD) * 8 / link.rate_bps
    rtt = 2 * link.delay_ps * 1e-12 + ser + _ROCE_ACK_WIRE * 8 / link.rate_bps
    pipe = -(-rtt // ser)
    return int(pipe + pipe // 8 + 1)
