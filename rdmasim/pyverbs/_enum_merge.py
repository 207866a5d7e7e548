"""Complete an enums module of the namespace from rdma-core's tables (:mod:`._enum_values`).

A module defines the enums rdmasim gives meaning to (the data path's come from rdmasim's C
table); :func:`complete` then adds every other enum and member rdma-core's pyverbs declares, with
the values of rdma-core's headers, so that a program finds each name it may import. An enum the
module already has keeps its members and values and gains the missing ones.
"""

from __future__ import annotations

import re
from enum import IntEnum, IntFlag
from typing import Any

# enums whose members combine as bits (pyverbs' cpdef enums are flag-like for these)
_FLAGS = re.compile(r"(flags?|mask|caps?|cap_bits|fields|offloads|_sig_mask)(\d*)$")


def complete(ns: dict[str, Any], table: list[tuple[str, bool, list[tuple[str, int]]]],
             aliases: list[tuple[str, int]]) -> None:
    """Add to module namespace ``ns`` the enums of ``table`` it lacks, the members its own enums
    lack, the members of each enum as module-level names, and ``aliases`` (module-level ints)."""
    for ename, visible, members in table:
        if not visible:
            continue  # a C-only enum: its members reach Python only through aliases
        if not ename:
            for name, value in members:
                ns.setdefault(name, value)
            continue
        cls = ns.get(ename)
        if cls is None:
            kind = IntFlag if _FLAGS.search(ename) else IntEnum
            cls = kind(ename, dict(members), module=ns["__name__"])
        else:
            have = dict(cls.__members__)
            extra = {n: v for n, v in members if n not in have}
            if extra:
                kind = IntFlag if issubclass(cls, IntFlag) else IntEnum
                cls = kind(ename, {**{n: m.value for n, m in have.items()}, **extra}, module=ns["__name__"])
        ns[ename] = cls
        ns.update(cls.__members__)
    for name, value in aliases:
        ns.setdefault(name, value)
