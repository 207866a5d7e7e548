"""Plain attribute classes: pyverbs' wrappers of a C struct that only hold values (``FlowAttr``,
``EthSpec``, ``WQInitAttr``, ``ConnParam``, ...), for features whose objects the device refuses to
create. They take pyverbs' constructor arguments, with its defaults, and keep them as attributes;
an unknown argument is a TypeError naming it."""

from __future__ import annotations

from typing import Any


def attr_class(name: str, module: str, doc: str, fields: list[tuple[str, Any]]) -> type:
    """A class ``name`` whose constructor takes ``fields`` (``(argument, default)`` in pyverbs'
    order, positionally or by keyword) and stores each as an attribute of that name."""
    names = [f for f, _ in fields]
    defaults = dict(fields)

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        if len(args) > len(names):
            raise TypeError(f"{name}() takes at most {len(names)} positional arguments ({len(args)} given)")
        unknown = [k for k in kwargs if k not in defaults]
        if unknown:
            raise TypeError(f"{name}(): unknown argument(s) {unknown}; it takes {names}")
        values = dict(defaults)
        for f, v in zip(names, args, strict=False):
            if f in kwargs:
                raise TypeError(f"{name}(): {f} given twice")
            values[f] = v
        values.update(kwargs)
        for f, v in values.items():
            setattr(self, f, v)

    def __repr__(self: Any) -> str:
        inner = ", ".join(f"{f}={getattr(self, f)!r}" for f in names)
        return f"{name}({inner})"

    return type(name, (), {"__init__": __init__, "__repr__": __repr__, "__doc__": doc, "__module__": module})
