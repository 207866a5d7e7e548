"""The checks every congestion-control parameter dataclass runs in ``__post_init__``: a failure
raises ValueError naming the algorithm, the parameter, its value and what is allowed."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from rdmasim.checks import is_zero


class ParamChecks:
    """Checks of the fields of ``params`` (a dataclass of ``algorithm``'s parameters)."""

    def __init__(self, algorithm: str, params: Any) -> None:
        self.algorithm = algorithm
        self.params = params

    def check(self, name: str, ok: bool, allowed: str) -> None:
        """Raise unless ``ok``: "<algorithm> parameter <name>=<value>: allowed <allowed>"."""
        if not ok:
            raise ValueError(f"{self.algorithm} parameter {name}={getattr(self.params, name)!r}: "
                             f"allowed {allowed}")

    def number(self, name: str) -> bool:
        """The field is an int or a float (not a bool)."""
        v = getattr(self.params, name)
        return isinstance(v, (int, float)) and not isinstance(v, bool)

    def integer(self, name: str) -> bool:
        """The field is an int (not a bool)."""
        v = getattr(self.params, name)
        return isinstance(v, int) and not isinstance(v, bool)

    def parses(self, name: str, parse: Callable[[Any], int | float], zero_ok: bool) -> bool:
        """``parse`` (a unit parser) reads the field as a positive value, or it is 0 and ``zero_ok``."""
        v = getattr(self.params, name)
        if zero_ok and is_zero(v):
            return True
        try:
            return parse(v) > 0
        except (TypeError, ValueError):
            return False
