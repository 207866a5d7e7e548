"""Work requests and scatter/gather elements."""

from __future__ import annotations

from collections.abc import Iterator

from rdmasim.verbs import enums as e


class SGE:
    """A scatter/gather element: ``addr`` (an MR's ``buf`` + offset), ``length``, ``lkey``."""

    def __init__(self, addr: int, length: int, lkey: int) -> None:
        self.addr = int(addr)
        self.length = int(length)
        self.lkey = int(lkey)

    def as_tuple(self) -> tuple[int, int, int]:
        """``(addr, length, lkey)``."""
        return self.addr, self.length, self.lkey

    def __repr__(self) -> str:
        return f"SGE(addr=0x{self.addr:x}, length={self.length}, lkey=0x{self.lkey:x})"


class SendWR:
    """A send work request (``struct ibv_send_wr``). Chain with ``next_wr``."""

    def __init__(self, wr_id: int = 0, opcode: int = e.IBV_WR_SEND, num_sge: int | None = None,
                 imm_data: int = 0, sg: list[SGE] | None = None,
                 send_flags: int = e.IBV_SEND_SIGNALED, next_wr: SendWR | None = None) -> None:
        self.wr_id = int(wr_id)
        self.opcode = int(opcode)
        self.sg = list(sg or [])
        self.num_sge = len(self.sg) if num_sge is None else int(num_sge)
        self.imm_data = int(imm_data)
        self.send_flags = int(send_flags)
        self.next_wr = next_wr
        self.remote_addr = 0
        self.rkey = 0
        self.compare_add = 0
        self.swap = 0

    def set_wr_rdma(self, rkey: int, addr: int) -> None:
        """Target of an RDMA WRITE/READ: the remote MR's ``rkey`` and an address in it."""
        self.rkey = int(rkey)
        self.remote_addr = int(addr)

    def set_wr_atomic(self, rkey: int, addr: int, compare_add: int, swap: int = 0) -> None:
        """Target and operands of an atomic operation."""
        self.rkey = int(rkey)
        self.remote_addr = int(addr)
        self.compare_add = int(compare_add)
        self.swap = int(swap)

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
        return f"SendWR(wr_id={self.wr_id}, opcode={op}, sg={self.sg}, send_flags={self.send_flags})"


class RecvWR:
    """A receive work request (``struct ibv_recv_wr``). Chain with ``next_wr``."""

    def __init__(self, wr_id: int = 0, num_sge: int | None = None, sg: list[SGE] | None = None,
                 next_wr: RecvWR | None = None) -> None:
        self.wr_id = int(wr_id)
        self.sg = list(sg or [])
        self.num_sge = len(self.sg) if num_sge is None else int(num_sge)
        self.next_wr = next_wr

    def chain(self) -> Iterator[RecvWR]:
        """This WR and every WR linked after it through ``next_wr``."""
        wr: RecvWR | None = self
        while wr is not None:
            yield wr
            wr = wr.next_wr

    def __repr__(self) -> str:
        return f"RecvWR(wr_id={self.wr_id}, sg={self.sg})"
