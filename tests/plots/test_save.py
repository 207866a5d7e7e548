"""save(): formats, folders, reproducible bytes, and closing pyplot figures."""

from __future__ import annotations

from pathlib import Path

from plot_data import assert_png_svg, flow_table

from rdmasim.plots import fct_slowdown_by_size, save


def test_formats_folders_and_dotted_stems(tmp_path: Path) -> None:
    fig = fct_slowdown_by_size(flow_table(n=100))
    paths = save(fig, tmp_path / "new" / "dir" / "fct.v2", formats=("png", ".SVG", "pdf"))
    assert [p.name for p in paths] == ["fct.v2.png", "fct.v2.svg", "fct.v2.pdf"]
    assert_png_svg(paths)
    assert paths[2].read_bytes()[:5] == b"%PDF-"


def test_same_figure_same_bytes(tmp_path: Path) -> None:
    a = save(fct_slowdown_by_size(flow_table(n=100)), tmp_path / "a")
    b = save(fct_slowdown_by_size(flow_table(n=100)), tmp_path / "b")
    for pa, pb in zip(a, b, strict=True):
        assert pa.read_bytes() == pb.read_bytes(), pa.suffix


def test_a_pyplot_figure_is_closed(tmp_path: Path) -> None:
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots()
    ax.plot([0, 1], [1, 0])
    assert plt.fignum_exists(fig.number)
    assert_png_svg(save(fig, tmp_path / "pyplot"))
    assert not plt.fignum_exists(fig.number)
