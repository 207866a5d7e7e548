"""Numbers of the daemon's wire protocol; rdmasim/fabricd/proto.h is the C side and says the layout."""

from __future__ import annotations

import re
import socket
from pathlib import Path

VERSION = 1
HEADER_BYTES = 16


def _load() -> dict[str, int]:
    """The ``RSD_*`` enumerators and defines of rdmasim/fabricd/proto.h, read from the header itself so that
    the two sides cannot drift apart."""
    text = (Path(__file__).resolve().parent / "proto.h").read_text()
    out: dict[str, int] = {}
    for m in re.finditer(r"#define (RSD_\w+) (\d+)", text):
        out[m.group(1)] = int(m.group(2))
    for body in re.findall(r"enum rsd_\w+ \{(.*?)\};", text, re.S):
        nxt = 0
        for item in re.sub(r"/\*.*?\*/", "", body, flags=re.S).split(","):
            item = item.strip()
            if not item:
                continue
            name, _, value = item.partition("=")
            nxt = int(value) if value.strip() else nxt
            out[name.strip()] = nxt
            nxt += 1
    return out


C = _load()


def recv_exact(sock: socket.socket, n: int, *, closed: str = "peer closed",
               error: type[Exception] = ConnectionError) -> bytes:
    """Read exactly ``n`` bytes of a message; ``error(closed)`` if the other side closed first."""
    buf = bytearray()
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise error(closed)
        buf += chunk
    return bytes(buf)
