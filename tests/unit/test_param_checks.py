"""The zero that means "none" / "the default" in congestion-control parameters is the integer 0 or
"0": ``False`` and ``0.0`` are refused by name, not read as 0 (a bool or a float in a rate, size or
time field is a mistake, as everywhere else)."""

from __future__ import annotations

import pytest

from rdmasim._param_checks import is_zero
from rdmasim.cc_dctcp import DctcpParams
from rdmasim.cc_hpcc import HpccParams
from rdmasim.cc_ibcc import IbccParams
from rdmasim.cc_timely import TimelyParams


def test_is_zero_is_the_integer_or_the_string() -> None:
    assert is_zero(0) and is_zero("0")
    for v in (False, 0.0, -0.0, None, "", "0.0", 1, True):
        assert not is_zero(v), v


@pytest.mark.parametrize(("cls", "name"), [
    (HpccParams, "ai_rate"), (HpccParams, "min_rate"), (HpccParams, "max_rate"),
    (TimelyParams, "min_rate"), (TimelyParams, "max_rate"), (TimelyParams, "initial_rate"),
    (TimelyParams, "segment"),
    (DctcpParams, "min_rate"), (DctcpParams, "max_rate"), (DctcpParams, "window"),
    (IbccParams, "cnp_interval"),
])
@pytest.mark.parametrize("bad", [False, 0.0])
def test_false_and_zero_point_zero_are_not_the_zero(cls: type, name: str, bad: object) -> None:
    assert getattr(cls(**{name: 0}), name) in (0, "0")  # the integer zero is the default's spelling
    with pytest.raises(ValueError, match=rf"parameter {name}={bad!r}: allowed"):
        cls(**{name: bad})


@pytest.mark.parametrize("bad", [False, 0.0])
def test_dcqcn_max_rate_false_or_zero_point_zero_is_not_unlimited(bad: object) -> None:
    from rdmasim.cc import DcqcnParams

    assert DcqcnParams(max_rate=0).max_rate == 0  # the integer zero: no cap
    with pytest.raises((TypeError, ValueError), match="rate"):
        DcqcnParams(max_rate=bad)


@pytest.mark.parametrize("bad", [False, 0.0])
def test_slow_receiver_false_or_zero_point_zero_is_not_a_stuck_receiver(bad: object) -> None:
    import rdmasim
    from rdmasim import fabric

    topo = rdmasim.back_to_back()
    with pytest.raises((TypeError, ValueError), match="rate"):
        fabric.slow_receiver(topo.b, bad)
    fabric.slow_receiver(topo.b, 0)  # the integer zero: stuck, as documented
