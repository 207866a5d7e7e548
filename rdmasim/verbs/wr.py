"""Work requests and scatter/gather elements."""

from __future__ import annotations

import inspect
import sys
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from rdmasim import _core
from rdmasim.errors import PyverbsRDMAError, PyverbsUserError
from rdmasim.verbs import enums as e
from rdmasim.verbs._checks import U32, U64, MRKey, instance, int_in, key, same_sim
from rdmasim.verbs.ah import AH
from rdmasim.verbs.device import PD
from rdmasim.verbs.mw import MW, MWBindInfo, inc_rkey

if TYPE_CHECKING:
    from rdmasim.transport.handle import SimHandle


def _key(what: str, value: Any) -> int:
    """A key checked to 32 bits, kept as the MRKey it may be (post_send checks its simulation)."""
    if (type(value) is int or type(value) is MRKey) and 0 <= value <= U32:  # without int_in's call
        return value
    v = int_in(what, value, 0, U32)
    return value if isinstance(value, MRKey) else v


def _signature(**defaults: Any) -> inspect.Signature:
    """The constructor's signature for help() and inspect (it is a C function: it has none)."""
    return inspect.Signature([inspect.Parameter(k, inspect.Parameter.POSITIONAL_OR_KEYWORD, default=v)
                              for k, v in defaults.items()])


class SGE(_core.SGEInit):
    """A scatter/gather element: ``addr`` (an MR's ``buf`` + offset), ``length``, ``lkey``.

    Made in C (rdmasim/_wr.pxi) when every argument is a plain int in range (``lkey`` may be an
    MR's key); anything else through ``_init_checked``."""

    __slots__ = _core.SGE_SLOTS
    _layout: _core.WRLayout  # where the C constructor stores the fields (set below)
    __signature__ = inspect.Signature([inspect.Parameter(n, inspect.Parameter.POSITIONAL_OR_KEYWORD)
                                       for n in ("addr", "length", "lkey")])

    def _init_checked(self, addr: Any, length: Any, lkey: Any) -> None:
        """The fields checked one by one, in order, so the first bad one is named."""
        self.addr = addr if type(addr) is int and 0 <= addr <= U64 else int_in("SGE addr", addr, 0, U64)
        self.length = (length if type(length) is int and 0 <= length <= U32
                       else int_in("SGE length", length, 0, U32))
        self.lkey = (lkey if (type(lkey) is int or type(lkey) is MRKey) and 0 <= lkey <= U32
                     else _key("SGE lkey", lkey))

    def as_tuple(self) -> tuple[int, int, int]:
        """``(addr, length, lkey)``."""
        return self.addr, self.length, self.lkey

    def __repr__(self) -> str:
        return f"SGE(addr={_hex(self.addr)}, length={self.length!r}, lkey={_hex(self.lkey)})"


def _hex(v: Any) -> str:
    """0x... for an int; any other value (a field set to something wrong) as its repr."""
    return f"0x{v:x}" if isinstance(v, int) else repr(v)


def _sges(what: str, sg: Any) -> list[SGE]:
    if sg is None:
        return []
    if not isinstance(sg, (list, tuple)):
        raise PyverbsUserError(f"{what} must be a list of SGE, got {sg!r} ({type(sg).__name__})")
    out = list(sg)
    for i, s in enumerate(out):
        instance(f"{what}[{i}]", s, SGE)
    return out


#: SGEs a work request holds in the core (a QP's or SRQ's max_*_sge is at most this).
MAX_SGE_PER_WR = 32


def sge_list(what: str, sg: Any, num_sge: Any, sim: SimHandle, owner: str) -> list[tuple[int, int, int]]:
    """The first ``num_sge`` SGEs of a work request as checked (addr, length, lkey) tuples; more
    than the ``owner`` (a QP, an SRQ) can take is EINVAL, as ibv_post_send / ibv_post_recv."""
    if not isinstance(sg, (list, tuple)):
        raise PyverbsUserError(f"{what}: sg must be a list of SGE, got {sg!r}")
    n = int_in(f"{what}: num_sge", num_sge, 0, len(sg))
    if n > MAX_SGE_PER_WR:
        raise PyverbsRDMAError(f"{what}: num_sge={n} exceeds the {owner}'s max ({MAX_SGE_PER_WR} at most)")
    out = []
    for k, s in enumerate(sg[:n]):
        instance(f"{what}: sg[{k}]", s, SGE)
        out.append((int_in(f"{what}: sg[{k}].addr", s.addr, 0, U64),
                    int_in(f"{what}: sg[{k}].length", s.length, 0, U32),
                    key(f"{what}: sg[{k}].lkey", s.lkey, sim)))
    return out


def copy_wr_fields(dst: Any, src: Any) -> None:
    """Copy every field of work request ``src`` into ``dst`` (pyverbs' ``bad_wr``)."""
    for cls in type(src).__mro__:
        for k in cls.__dict__.get("__slots__", ()):
            if hasattr(src, k):
                setattr(dst, k, getattr(src, k))
    for k, v in getattr(src, "__dict__", {}).items():
        setattr(dst, k, v)


class SendWR(_core.SendWRInit):
    """A send work request (``struct ibv_send_wr``). Chain with ``next_wr``.

    ``SendWR(wr_id=0, opcode=IBV_WR_SEND, num_sge=None, imm_data=0, sg=None,
    send_flags=IBV_SEND_SIGNALED, next_wr=None)``, as pyverbs. Its fields are fixed (as the C
    struct): setting a misspelt one raises AttributeError. They are checked when the work request
    is posted. Made in C (rdmasim/_wr.pxi) in the common case (plain ints, no or one SGE, num_sge
    and next_wr left out); anything else through ``_init_checked``. ``set_wr_rdma`` likewise."""

    __slots__ = _core.SEND_WR_SLOTS
    _layout: _core.WRLayout
    __signature__ = _signature(wr_id=0, opcode=e.IBV_WR_SEND, num_sge=None, imm_data=0, sg=None,
                               send_flags=e.IBV_SEND_SIGNALED, next_wr=None)

    def _init_checked(self, wr_id: Any, opcode: Any, num_sge: Any, imm_data: Any, sg: Any, send_flags: Any,
                      next_wr: Any) -> None:
        """The fields checked one by one, in order, so the first bad one is named."""
        self.wr_id = (wr_id if type(wr_id) is int and 0 <= wr_id <= U64
                      else int_in("SendWR wr_id", wr_id, 0, U64))
        self.opcode = (opcode if type(opcode) is int and 0 <= opcode <= U32
                       else int_in("SendWR opcode", opcode, 0, U32))
        self.sg = _sges("SendWR sg", sg)
        self.num_sge = len(self.sg) if num_sge is None else int_in("SendWR num_sge", num_sge, 0, len(self.sg))
        self.imm_data = (imm_data if type(imm_data) is int and 0 <= imm_data <= U32
                         else int_in("SendWR imm_data", imm_data, 0, U32))
        self.send_flags = (send_flags if type(send_flags) is int and 0 <= send_flags <= U32
                           else int_in("SendWR send_flags", send_flags, 0, U32))
        self.next_wr = None if next_wr is None else instance("SendWR next_wr", next_wr, SendWR)
        self.remote_addr = 0
        self.rkey = 0
        self.compare_add = 0
        self.swap = 0
        self.ah = None  # UD (set_wr_ud): an rdmasim.verbs.AH
        self.remote_qpn = 0
        self.remote_qkey = 0
        self.bind_mw = None  # IBV_WR_BIND_MW (set_bind_wr): the window and its bind info
        self.bind_info = None

    def _set_wr_rdma_checked(self, rkey: Any, addr: Any) -> None:
        """``set_wr_rdma`` of anything but plain values: checked, rkey first."""
        self.rkey = _key("set_wr_rdma rkey", rkey)
        self.remote_addr = int_in("set_wr_rdma addr", addr, 0, U64)

    def set_wr_atomic(self, rkey: int, addr: int, compare_add: int, swap: int = 0) -> None:
        """Target and operands of an atomic operation."""
        self.rkey = _key("set_wr_atomic rkey", rkey)
        self.remote_addr = int_in("set_wr_atomic addr", addr, 0, U64)
        self.compare_add = int_in("set_wr_atomic compare_add", compare_add, 0, U64)
        self.swap = int_in("set_wr_atomic swap", swap, 0, U64)

    def set_wr_atomic_write(self, rkey: int, addr: int, data: bytes) -> None:
        """IBV_WR_ATOMIC_WRITE: place the 8 bytes ``data`` at ``addr`` (8-byte aligned) of the remote
        region under ``rkey`` in one step (the responder needs REMOTE_WRITE). RC only."""
        self.rkey = _key("set_wr_atomic_write rkey", rkey)
        self.remote_addr = int_in("set_wr_atomic_write addr", addr, 0, U64)
        if not isinstance(data, (bytes, bytearray, memoryview)) or len(bytes(data)) != 8:
            raise PyverbsUserError(f"set_wr_atomic_write data must be exactly 8 bytes, got {data!r}")
        # the core copies the word's host-order bytes onto the wire: the bytes travel as given
        self.compare_add = int.from_bytes(bytes(data), sys.byteorder)

    def set_wr_flush(self, rkey: int, addr: int, length: int, ptype: int, level: int) -> None:
        """IBV_WR_FLUSH: make ``length`` bytes at ``addr`` under ``rkey`` (level IBV_FLUSH_RANGE, 0)
        or the whole region (IBV_FLUSH_MR, 1) globally visible (placement type IBV_FLUSH_GLOBAL, 1)
        and/or persistent (IBV_FLUSH_PERSISTENT, 2). RC only."""
        self.rkey = _key("set_wr_flush rkey", rkey)
        self.remote_addr = int_in("set_wr_flush addr", addr, 0, U64)
        self.compare_add = int_in("set_wr_flush length", length, 0, U32)
        ptype = int_in("set_wr_flush type", ptype, 1, 3)
        level = int_in("set_wr_flush level", level, 0, 1)
        self.imm_data = (level << 4) | ptype  # the FETH word (rxe feth_init)

    def set_bind_wr(self, mw: Any, bind_info: Any) -> None:
        """IBV_WR_BIND_MW: bind window ``mw`` (type 2) as ``bind_info`` (an MWBindInfo) says. The
        window's new key, ``inc_rkey(mw.rkey)`` as pyverbs computes it, is ``self.rkey``; the
        window answers to it once the bind completes."""
        self.bind_mw = instance("set_bind_wr mw", mw, MW)
        self.bind_info = instance("set_bind_wr bind_info", bind_info, MWBindInfo)
        self.rkey = inc_rkey(mw.rkey)

    def bind_args(self, what: str, sim: Any) -> dict[str, int]:
        """The core's bind fields of an IBV_WR_BIND_MW work request (post_send)."""
        if self.bind_mw is None or self.bind_info is None:
            raise PyverbsUserError(f"{what}: an IBV_WR_BIND_MW work request needs "
                                   "wr.set_bind_wr(mw, bind_info)")
        mw, info = self.bind_mw, self.bind_info
        mw._check_open(what)
        same_sim(f"{what}: mw", mw.pd.ctx.sim, sim)
        same_sim(f"{what}: bind_info mr", info.mr.pd.ctx.sim, sim)
        return {"bind_mw_rkey": int(mw.rkey), "bind_lkey": int(info.mr.lkey),
                "bind_access": int(info.mw_access_flags), "bind_len": int(info.length)}

    def set_wr_ud(self, ah: Any, rqpn: int, rqkey: int) -> None:
        """UD destination: an address handle (``AH``), the remote QP number and its Q_Key (a Q_Key
        with the high bit set means the sending QP's own qkey)."""
        self.ah = instance("set_wr_ud ah", ah, AH)
        self.remote_qpn = int_in("set_wr_ud rqpn", rqpn, 0, 0xFFFFFF)
        self.remote_qkey = int_in("set_wr_ud rqkey", rqkey, 0, U32)

    def ud_args(self, what: str, sim: Any, pd: PD) -> dict[str, int]:
        """The core's UD fields of this WR (post_send on a UD QP of PD ``pd``).  An address handle
        of another PD (or device) or one destroyed gives the QP no address vector: the WR is
        posted and completes IBV_WC_LOC_QP_OP_ERR when sent, as rxe (rxe_get_av)."""
        if self.ah is None:
            raise PyverbsUserError(f"{what}: a UD QP needs wr.set_wr_ud(ah, rqpn, rqkey) first")
        ah = instance(f"{what}: ah", self.ah, AH)
        same_sim(f"{what}: ah", ah.pd.ctx.sim, sim)
        usable = not ah._closed and ah.pd is pd
        return {"ud_dest_host": ah.dest.index if usable else _core.UD_DEST_NO_AV,
                "ud_traffic_class": ah.traffic_class,
                "ud_remote_qpn": int_in(f"{what}: remote_qpn", self.remote_qpn, 0, 0xFFFFFF),
                "ud_remote_qkey": int_in(f"{what}: remote_qkey", self.remote_qkey, 0, U32)}

    def chain(self) -> Iterator[SendWR]:
        """This WR and every WR linked after it through ``next_wr``."""
        wr: SendWR | None = self
        while wr is not None:
            yield wr
            wr = wr.next_wr

    def __repr__(self) -> str:
        try:
            op = e.ibv_wr_opcode(self.opcode).name
        except ValueError:
            op = str(self.opcode)
        return f"SendWR(wr_id={self.wr_id!r}, opcode={op}, sg={self.sg!r}, send_flags={self.send_flags!r})"


class RecvWR(_core.RecvWRInit):
    """A receive work request (``struct ibv_recv_wr``):
    ``RecvWR(wr_id=0, num_sge=None, sg=None, next_wr=None)``. Chain with ``next_wr``. Made in C
    (rdmasim/_wr.pxi) in the common case (a plain wr_id, one SGE, num_sge left out)."""

    __slots__ = _core.RECV_WR_SLOTS
    _layout: _core.WRLayout
    __signature__ = _signature(wr_id=0, num_sge=None, sg=None, next_wr=None)

    def _init_checked(self, wr_id: Any, num_sge: Any, sg: Any, next_wr: Any) -> None:
        """The fields checked one by one, in order, so the first bad one is named."""
        self.wr_id = int_in("RecvWR wr_id", wr_id, 0, U64)
        self.sg = _sges("RecvWR sg", sg)
        self.num_sge = len(self.sg) if num_sge is None else int_in("RecvWR num_sge", num_sge, 0, len(self.sg))
        self.next_wr = None if next_wr is None else instance("RecvWR next_wr", next_wr, RecvWR)

    def chain(self) -> Iterator[RecvWR]:
        """This WR and every WR linked after it through ``next_wr``."""
        wr: RecvWR | None = self
        while wr is not None:
            yield wr
            wr = wr.next_wr

    def __repr__(self) -> str:
        return f"RecvWR(wr_id={self.wr_id!r}, sg={self.sg!r})"


SGE._layout = _core.WRLayout(SGE, key_type=MRKey)
SendWR._layout = _core.WRLayout(SendWR, key_type=MRKey, sge_type=SGE)
RecvWR._layout = _core.WRLayout(RecvWR, sge_type=SGE, wr_type=RecvWR)


def report_bad_wr(bad_wr: Any, wr: Any) -> None:
    """Hand the work request that failed to the caller's ``bad_wr``: appended to a list, or
    copied into a work request of its kind (pyverbs: a SendWR for post_send, a RecvWR for
    post_recv). Anything else is left alone, so the error of the post itself is what the
    caller sees."""
    if isinstance(bad_wr, list):
        bad_wr.append(wr)
    elif (isinstance(bad_wr, SendWR) and isinstance(wr, SendWR)) or (
            isinstance(bad_wr, RecvWR) and isinstance(wr, RecvWR)):
        copy_wr_fields(bad_wr, wr)
