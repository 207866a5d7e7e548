"""Work completions."""

from __future__ import annotations

from typing import NamedTuple

from rdmasim.verbs import enums as e


class WC(NamedTuple):
    """A work completion (``struct ibv_wc``): a light, immutable record (a named tuple, made in
    one step from the core's completion). Fields as rdma-core names them, every field of
    pyverbs' ``WC``: ``slid`` (source LID) and ``dlid_path_bits`` are 0, as on RoCE, where the
    source is in the GRH and there are no LIDs (the verbs view is RoCE's on either link layer,
    as ``sl`` is)."""

    wr_id: int = 0
    status: int = 0
    opcode: int = 0
    vendor_err: int = 0
    byte_len: int = 0
    imm_data: int = 0
    qp_num: int = 0
    src_qp: int = 0
    wc_flags: int = 0
    pkey_index: int = 0
    sl: int = 0
    slid: int = 0
    dlid_path_bits: int = 0


    @property
    def ok(self) -> bool:
        """True when ``status`` is IBV_WC_SUCCESS."""
        return self.status == e.IBV_WC_SUCCESS

    def __repr__(self) -> str:
        status = e.wc_status_to_str(self.status)
        try:
            op = e.ibv_wc_opcode(self.opcode).name
        except ValueError:
            op = str(self.opcode)
        imm = f", imm_data=0x{self.imm_data:x}" if self.wc_flags & e.IBV_WC_WITH_IMM else ""
        return (f"WC(wr_id={self.wr_id}, status={status}, opcode={op}, byte_len={self.byte_len}"
                f"{imm}, qp_num=0x{self.qp_num:x})")
