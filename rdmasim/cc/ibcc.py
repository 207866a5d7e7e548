"""InfiniBand congestion control (IBA vol. 1 annex A10): parameters (csrc/cc/ibcc.c has the rules).

A switch port whose queue passes its threshold marks FECN (the ECN CE mark the switch sets); the
destination answers with a BECN (a CNP); the source's congestion control agent keeps a CCT index
(CCTI) per QP: each BECN adds ``ccti_increase`` up to ``ccti_limit``, and each expiry of the
``ccti_timer`` takes one off down to ``ccti_min``. After every packet the QP waits the inter-packet
delay (IPD) of entry ``cct[CCTI]`` of its congestion control table. An entry is the annex's 16-bit
pair CCT_Shift (2 bits) and CCT_Multiplier (14 bits); its IPD is multiplier << shift units of
``ipd_unit``. ``cct`` takes IPD values (each must be exactly encodable: see :func:`encode_ipd`) or
``(shift, multiplier)`` pairs.

Sources (docs/cc-ibcc.md): the entry encoding from OpenSM (``osm_congestion_control.c``) and the
Linux ``ib_cc_table_entry``; ``ccti_timer`` in 1.024 us units and the timer's behaviour from the
Linux hfi1 driver (``process_becn``, ``cca_timer_fn``); ``ccti_increase`` 1 and ``ccti_min`` 0 from
the Mellanox OFED congestion control manager's defaults; a 128-entry table from the Linux qib
driver's minimum (``IB_CCT_MIN_ENTRIES``). The annex does not fix a time unit for the IPD a
simulator can check against, so ``ipd_unit`` is a parameter and the default table
(:meth:`IbccParams.for_path`) is ours.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from typing import Any

from rdmasim.cc._param_checks import is_zero
from rdmasim.units import parse_rate, parse_size, parse_time

#: one CCTI_Timer unit (IBA annex A10; the Linux hfi1 driver: 1024 ns), ps
CCTI_TIMER_UNIT_PS = 1_024_000
#: entries a table may have (two of the annex's 64-entry blocks; csrc RS_IBCC_CCT_MAX)
CCT_MAX = 128
#: the largest IPD an entry encodes: multiplier 16383 << shift 3
IPD_MAX = 16383 << 3

#: wire bytes a RoCEv2 data packet adds to its payload (Ethernet, IPv4, UDP, BTH, RETH, ICRC,
#: FCS, preamble and inter-frame gap): for_path sizes the table from MTU + this
_WIRE_OVERHEAD = 78


def encode_ipd(ipd: int) -> int:
    """The 16-bit CCT entry (shift << 14 | multiplier) of inter-packet delay ``ipd`` (in IPD
    units), with the smallest shift that holds it exactly; ValueError when no entry does (values
    up to 16383 always fit; above, multiples of 2, 4 or 8 up to 131064)."""
    if isinstance(ipd, bool) or not isinstance(ipd, int) or not 0 <= ipd <= IPD_MAX:
        raise ValueError(f"IPD {ipd!r}: allowed an integer 0..{IPD_MAX}")
    for shift in range(4):
        if ipd % (1 << shift) == 0 and ipd >> shift < 1 << 14:
            return shift << 14 | ipd >> shift
    raise ValueError(f"IPD {ipd} has no exact CCT entry (multiplier < 16384 << shift 0..3): "
                     f"use a multiple of {1 << (ipd.bit_length() - 14)}")


def nearest_ipd(ipd: float) -> int:
    """The encodable IPD nearest to ``ipd`` (what :meth:`IbccParams.linear_cct` puts in a table)."""
    v = max(0, min(IPD_MAX, round(ipd)))
    shift = max(0, v.bit_length() - 14)
    q = 1 << shift
    v = min(IPD_MAX, (v + q // 2) // q * q)
    encode_ipd(v)
    return v


def _entry(e: Any) -> int:
    """One table entry as written (an IPD value or a (shift, multiplier) pair) -> its 16 bits."""
    if isinstance(e, (tuple, list)):
        if (len(e) != 2 or not all(isinstance(x, int) and not isinstance(x, bool) for x in e)
                or not 0 <= e[0] <= 3 or not 0 <= e[1] < 1 << 14):
            raise ValueError(f"CCT entry {e!r}: allowed (shift 0..3, multiplier 0..16383)")
        return int(e[0]) << 14 | int(e[1])
    return encode_ipd(e)


def _default_cct() -> tuple[int, ...]:
    return IbccParams.linear_cct(CCT_MAX, _DEFAULT_STEP)


#: the default table's step: IbccParams.for_path("100Gbps", 1024)'s (docs/cc-ibcc.md)
_DEFAULT_STEP = 22


@dataclass(frozen=True)
class IbccParams:
    """The CA congestion setting and congestion control table of IBA annex A10 (per QP)."""

    ccti_increase: int = 1                 # CCTI_Increase (Mellanox CC manager default)
    ccti_limit: int | None = None          # CCTI_Limit; None = the table's last index
    ccti_min: int = 0                      # CCTI_Min (Mellanox CC manager default)
    ccti_timer: int = 300                  # CCTI_Timer, units of 1.024 us (ours: docs/cc-ibcc.md)
    cct: tuple[Any, ...] = field(default_factory=_default_cct)  # IPD values or (shift, multiplier)
    ipd_unit: str | int = "1ns"            # the time of one IPD unit (ours)
    cnp_interval: str | int = "4us"        # NP: at most one BECN per QP per interval; 0 = one per mark

    def __post_init__(self) -> None:
        def check(name: str, ok: bool, allowed: str) -> None:
            if not ok:
                raise ValueError(f"IB CC parameter {name}={getattr(self, name)!r}: allowed {allowed}")

        def integer(name: str) -> bool:
            v = getattr(self, name)
            return isinstance(v, int) and not isinstance(v, bool)

        def parses(name: str, positive: bool) -> bool:
            if not positive and is_zero(getattr(self, name)):
                object.__setattr__(self, name, 0)
                return True
            try:
                t = parse_time(getattr(self, name))
            except (TypeError, ValueError):
                return False
            return t > 0 if positive else t >= 0

        cct = self.cct
        check("cct", isinstance(cct, (list, tuple)) and 1 <= len(cct) <= CCT_MAX,
              f"a list of 1..{CCT_MAX} entries (IPD values or (shift, multiplier) pairs)")
        for i, e in enumerate(cct):
            try:
                _entry(e)
            except ValueError as exc:
                raise ValueError(f"IB CC parameter cct=<entry {i}: {e!r}>: {exc}") from None
        object.__setattr__(self, "cct", tuple(tuple(e) if isinstance(e, list) else e for e in cct))
        last = len(cct) - 1
        check("ccti_increase", integer("ccti_increase") and 1 <= self.ccti_increase <= 255,
              "an integer 1..255 (the annex's 8-bit field)")
        limit_ok = self.ccti_limit is None or (integer("ccti_limit") and 0 <= self.ccti_limit <= last)
        check("ccti_limit", limit_ok, f"None (the table's last index) or an integer 0..{last} (len(cct) - 1)")
        limit = last if self.ccti_limit is None else self.ccti_limit
        check("ccti_min", integer("ccti_min") and 0 <= self.ccti_min <= limit,
              f"an integer 0..{limit} (ccti_limit)")
        check("ccti_timer", integer("ccti_timer") and 1 <= self.ccti_timer <= 65535,
              "an integer 1..65535 (units of 1.024 us; the annex's 16-bit field)")
        check("ipd_unit", parses("ipd_unit", True), "a positive time, e.g. '1ns'")
        check("cnp_interval", parses("cnp_interval", False),
              "0 (a BECN per marked packet) or a time, e.g. '4us'")

    # ---- tables ----

    @staticmethod
    def linear_cct(n: int = CCT_MAX, step: int = _DEFAULT_STEP) -> tuple[int, ...]:
        """A table of ``n`` entries whose IPD grows linearly: entry i = i x ``step`` IPD units
        (each rounded to the nearest encodable value above 16383), the shape Gran et al. (IPDPS
        2010) and Pfister et al. use."""
        if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= CCT_MAX:
            raise ValueError(f"linear_cct n={n!r}: allowed 1..{CCT_MAX}")
        if isinstance(step, bool) or not isinstance(step, int) or not 0 <= step * (n - 1) <= IPD_MAX:
            raise ValueError(f"linear_cct step={step!r}: allowed an integer >= 0 with "
                             f"step x (n - 1) <= {IPD_MAX}")
        return tuple(nearest_ipd(i * step) for i in range(n))

    @classmethod
    def for_path(cls, line_rate: str | int, mtu: str | int, *, min_share: float = 1 / 32,
                 entries: int = CCT_MAX, **overrides: Any) -> IbccParams:
        """Settings for a port of ``line_rate`` sending ``mtu``-byte packets: a linear table of
        ``entries`` whose last entry holds an MTU packet to ``min_share`` of the line rate (its
        delay is (1/min_share - 1) packet times), with ``ipd_unit`` 1 ns; then ``overrides``.
        Entry i then holds the packet to 1 / (1 + i (1/min_share - 1) / (entries - 1)) of the line:
        N flows share a port near entry (N - 1) (entries - 1) / (1/min_share - 1)."""
        rate, size = parse_rate(line_rate), parse_size(mtu)
        if rate <= 0 or size <= 0 or not 0 < min_share < 1 or not 2 <= entries <= CCT_MAX:
            raise ValueError(f"for_path needs a positive line_rate and mtu, 0 < min_share < 1 and "
                             f"2 <= entries <= {CCT_MAX}; got {line_rate!r}, {mtu!r}, {min_share!r}, "
                             f"{entries!r}")
        packet_ns = (size + _WIRE_OVERHEAD) * 8 / rate * 1e9
        step = max(1, round(packet_ns * (1 / min_share - 1) / (entries - 1)))
        step = min(step, IPD_MAX // (entries - 1))
        kw: dict[str, Any] = dict(cct=cls.linear_cct(entries, step), ipd_unit="1ns")
        kw.update(overrides)
        return cls(**kw)

    @classmethod
    def from_scenario(cls, values: dict[str, Any]) -> IbccParams:
        """From a scenario's parsed ``congestion_control.ibcc.*`` values: ``cct`` an empty list
        means a linear table of ``cct_entries`` entries ``cct_step`` apart; ``ccti_limit`` -1 the
        table's last index (times in ps)."""
        p = "congestion_control.ibcc."
        cct = values[p + "cct"] or cls.linear_cct(values[p + "cct_entries"], values[p + "cct_step"])
        limit = values[p + "ccti_limit"]
        return cls(ccti_increase=values[p + "ccti_increase"], ccti_limit=None if limit == -1 else limit,
                   ccti_min=values[p + "ccti_min"], ccti_timer=values[p + "ccti_timer"], cct=tuple(cct),
                   ipd_unit=values[p + "ipd_unit"], cnp_interval=values[p + "cnp_interval"])

    # ---- what the C side takes ----

    @property
    def limit(self) -> int:
        """CCTI_Limit as used (the table's last index when ``ccti_limit`` is None)."""
        return len(self.cct) - 1 if self.ccti_limit is None else self.ccti_limit

    def entries(self) -> list[int]:
        """The table as 16-bit entries (shift << 14 | multiplier)."""
        return [_entry(e) for e in self.cct]

    def ipds(self) -> list[int]:
        """The table's inter-packet delays, IPD units."""
        return [(e & 0x3FFF) << (e >> 14) for e in self.entries()]

    def rate_bps(self, ccti: int, line_rate: str | int, wire_bytes: int) -> float:
        """The rate the agent paces ``wire_bytes`` packets at with CCTI = ``ccti`` (the line rate
        at IPD 0): wire bits / (wire time + IPD x ipd_unit)."""
        line = parse_rate(line_rate)
        bits = 8 * wire_bytes
        return bits / (bits / line + self.ipds()[ccti] * parse_time(self.ipd_unit) * 1e-12)

    def to_c(self) -> dict[str, Any]:
        """The fields of the C struct rs_ibcc_params (ps, 16-bit entries)."""
        return dict(ccti_timer_ps=self.ccti_timer * CCTI_TIMER_UNIT_PS, ipd_unit_ps=parse_time(self.ipd_unit),
                    ccti_increase=int(self.ccti_increase), ccti_limit=self.limit, ccti_min=int(self.ccti_min),
                    cct=self.entries())

    def as_dict(self) -> dict[str, Any]:
        """The parameters as written (strings with units kept)."""
        return asdict(self)

    @classmethod
    def field_names(cls) -> list[str]:
        """Names of every parameter."""
        return [f.name for f in fields(cls)]
