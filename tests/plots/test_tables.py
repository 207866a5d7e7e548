"""rdmasim.plots.as_columns reads every table form, and time_unit picks a readable unit."""

from __future__ import annotations

import numpy as np
import pytest
from plot_data import as_dict, flow_table

from rdmasim.plots import as_columns, time_unit


def test_structured_dict_rows_and_pandas_give_the_same_columns() -> None:
    table = flow_table(n=50)
    from_struct = as_columns(table)
    from_dict = as_columns({n: table[n] for n in table.dtype.names or ()})
    from_rows = as_columns([{n: row[n].item() for n in table.dtype.names or ()} for row in table])
    assert list(from_struct) == list(table.dtype.names or ())
    for cols in (from_dict, from_rows):
        assert set(cols) == set(from_struct)
        for name, col in from_struct.items():
            np.testing.assert_array_equal(cols[name], col)
    pd = pytest.importorskip("pandas")
    from_pandas = as_columns(pd.DataFrame(table))
    for name, col in from_struct.items():
        np.testing.assert_array_equal(from_pandas[name], col)


def test_none_cells_survive_as_object_columns() -> None:
    cols = as_columns(as_dict(flow_table(n=60)))
    assert any(v is None for v in cols["finish_ps"])


def test_unequal_columns_and_unknown_types_are_refused() -> None:
    with pytest.raises(ValueError, match="differ in length"):
        as_columns({"a": [1, 2], "b": [1]})
    with pytest.raises(TypeError, match="DataFrame"):
        as_columns(42)
    with pytest.raises(TypeError):
        as_columns(np.arange(3))  # a plain array has no column names


@pytest.mark.parametrize(("ps", "unit", "scale"), [
    (500, "ps", 1.0), (5_000, "ns", 1e3), (250e6, "µs", 1e6), (3e9, "ms", 1e9), (2e12, "s", 1e12),
    (0, "ps", 1.0),
])
def test_time_unit(ps: float, unit: str, scale: float) -> None:
    assert time_unit(ps) == (unit, scale)
