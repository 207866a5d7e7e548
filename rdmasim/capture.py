"""Read the pcap files rdmasim writes, decoded with the C codec, into plain rows."""

from __future__ import annotations

import struct
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rdmasim import codec
from rdmasim.fabric import Switch
from rdmasim.transport.handle import Host, Link, LinkDirection

if TYPE_CHECKING:
    from rdmasim._protocols import CoreSim as Simulator  # what a capture selection needs of one

_MAGIC_NS = 0xA1B23C4D
_MAGIC_US = 0xA1B2C3D4


@dataclass(frozen=True)
class Frame:
    """One captured frame: timestamp (ns) and its decoded header fields."""

    t_ns: int
    fields: dict[str, Any]


@dataclass(frozen=True)
class Record:
    """One pcap record as stored: timestamp (ns), the frame's length on the wire (without FCS) and
    the bytes captured (fewer than ``orig_len`` when a snaplen cut the frame)."""

    t_ns: int
    orig_len: int
    data: bytes


def read_records(path: str | Path) -> tuple[int, list[Record]]:
    """The file header's snaplen and every record of a classic little-endian pcap (ns or us)."""
    data = Path(path).read_bytes()
    if len(data) < 24:
        raise ValueError(f"{path}: too short for a pcap file")
    magic = struct.unpack_from("<I", data, 0)[0]
    if magic not in (_MAGIC_NS, _MAGIC_US):
        raise ValueError(f"{path}: not a little-endian classic pcap (magic 0x{magic:08x})")
    scale = 1 if magic == _MAGIC_NS else 1000
    snaplen = struct.unpack_from("<I", data, 16)[0]
    records = []
    off = 24
    while off + 16 <= len(data):
        sec, frac, incl, orig = struct.unpack_from("<IIII", data, off)
        off += 16
        records.append(Record(sec * 1_000_000_000 + frac * scale, orig, data[off:off + incl]))
        off += incl
    return snaplen, records


#: pcap link type -> (decoder, bytes of record header before the frame): Ethernet (RoCEv2, PFC),
#: InfiniBand from the LRH, ERF InfiniBand records (16-byte ERF header)
_DECODERS = {1: (codec.decode, 0), 247: (codec.decode_ib, 0), 197: (codec.decode_ib, 16)}


def read_pcap(path: str | Path) -> Iterator[Frame]:
    """Yield every frame of a classic pcap file (ns or us resolution), decoded: Ethernet (RoCEv2,
    PFC) or an InfiniBand fabric's capture (LINKTYPE_INFINIBAND or ERF, by ``codec.decode_ib``).

    Records cut by a snaplen (``sim.capture(path, snaplen=N)``) decode their headers; their
    fields have ``truncated`` True and ``payload`` holds the bytes captured. Frames the codec
    cannot decode raise ValueError naming the frame number.
    """
    linktype = struct.unpack_from("<I", Path(path).read_bytes()[:24].ljust(24, b"\0"), 20)[0]
    if linktype not in _DECODERS:
        raise ValueError(f"{path}: pcap link type {linktype}: allowed {sorted(_DECODERS)}")
    decode, skip = _DECODERS[linktype]
    for n, rec in enumerate(read_records(path)[1], start=1):
        try:
            fields = decode(rec.data[skip:], rec.orig_len - skip)
        except ValueError as exc:
            raise ValueError(f"{path}: frame {n}: {exc}") from None
        yield Frame(rec.t_ns, fields)


def link_ids(sim: Simulator, links: Iterable[Any]) -> list[int]:
    """The C link-direction ids a ``sim.capture(path, links=...)`` selection names.

    Each item is a ``Link`` (both directions), a ``LinkDirection`` (``link.ab`` / ``link.ba``: the
    frames sent that way), a ``Host`` (its NIC's link, both directions) or a ``(switch, port)``
    pair (the link on that switch port, both directions). Anything else, an object of another
    simulation or an empty selection is a ValueError naming it.
    """
    if isinstance(links, (str, bytes)) or not isinstance(links, Iterable):
        raise TypeError(f"capture links must be an iterable of links, link directions, hosts or "
                        f"(switch, port) pairs, not {links!r}")
    ids: list[int] = []
    for item in links:
        if isinstance(item, LinkDirection) and item.link.sim is sim:
            ids.append(item.link_id)
        elif isinstance(item, Link) and item.sim is sim:
            ids += [item.ab.link_id, item.ba.link_id]
        elif isinstance(item, Host) and item.sim is sim:
            if item.link is None:
                raise ValueError(f"capture links: host {item.name!r} has no link")
            ids += [item.link.ab.link_id, item.link.ba.link_id]
        elif (isinstance(item, tuple) and len(item) == 2 and isinstance(item[0], Switch)
              and item[0].sim is sim):
            sw, port = item
            sw._check_port(port)
            ids += [sw.ports[port].ab.link_id, sw.ports[port].ba.link_id]
        else:
            raise ValueError(f"capture links: {item!r} is not a link, link direction, host or "
                             f"(switch, port) of this simulator")
    if not ids:
        raise ValueError("capture links: empty selection (use links=None to capture every link)")
    return sorted(set(ids))
