"""``pyverbs.utils``: the text helpers of pyverbs (QP type/state, MTU, access flags, GIDs)."""

from __future__ import annotations

import struct

from rdmasim.errors import PyverbsUserError

__all__ = ["access_flags_to_str", "gid_str", "gid_str_to_array", "mig_state_to_str", "mtu_to_str",
           "qp_state_to_str", "qp_type_to_str"]

_QP_TYPES = {2: "RC", 3: "UC", 4: "UD", 8: "Raw Packet", 9: "XRCD_SEND", 10: "XRCD_RECV",
             0xFF: "Driver QP"}
_QP_STATES = {0: "Reset", 1: "Init", 2: "RTR", 3: "RTS", 4: "SQD", 5: "SQE", 6: "Error", 7: "Unknown"}
_MTUS = {1: 256, 2: 512, 3: 1024, 4: 2048, 5: 4096}
_ACCESS = {1: "Local write", 2: "Remote write", 4: "Remote read", 8: "Remote atomic", 16: "MW bind",
           32: "Zero based", 64: "On demand"}
_MIG = {0: "Migrated", 1: "Re-arm", 2: "Armed"}


def _be64toh(num: int) -> int:
    return int(struct.unpack("Q", struct.pack("!Q", num))[0])


def gid_str(subnet_prefix: int, interface_id: int) -> str:
    """The text of a GID given as its two big-endian 64-bit halves."""
    h = f"{_be64toh(subnet_prefix):016x}{_be64toh(interface_id):016x}"
    return ":".join(h[i:i + 4] for i in range(0, 32, 4))


def gid_str_to_array(val: str) -> list[str]:
    """``'xxxx:...:xxxx'`` (eight groups of four hex digits) as sixteen two-digit strings."""
    groups = val.split(":")
    if len(groups) != 8 or any(len(g) != 4 for g in groups):
        raise PyverbsUserError(f"Invalid GID value ({val!r}): give eight groups of four hex digits")
    return [g[i:i + 2] for g in groups for i in (0, 2)]


def qp_type_to_str(qp_type: int) -> str:
    """``'RC'``, ``'UD'``, ... for an IBV_QPT_* value."""
    return _QP_TYPES.get(qp_type, f"Unknown ({qp_type})")


def qp_state_to_str(qp_state: int) -> str:
    """``'Reset'``, ``'Init'``, ``'RTR'``, ... for an IBV_QPS_* value."""
    return _QP_STATES.get(qp_state, f"Unknown ({qp_state})")


def mtu_to_str(mtu: int) -> int:
    """The MTU in bytes of an IBV_MTU_* value (0 when unknown, as pyverbs)."""
    return _MTUS.get(mtu, 0)


def access_flags_to_str(flags: int) -> str:
    """The names of the IBV_ACCESS_* bits set in ``flags``, each followed by a space."""
    return "".join(name + " " for bit, name in _ACCESS.items() if flags & bit)


def mig_state_to_str(mig: int) -> str:
    """The name of an IBV_MIG_* state."""
    return _MIG.get(mig, f"Unknown ({mig})")
