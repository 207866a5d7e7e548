"""Shared pytest setup.

Tests marked ``slow`` are skipped in the default run (as the marker's description in
pyproject.toml says). Run them with ``--runslow`` or by selecting them with ``-m slow``.

This folder is on sys.path (rootdir-relative conftest), so tests import the shared setups of
``tests/support/`` as ``support.verbs_pair`` and ``support.pyverbs_pair``. The fixture here:
``fresh_pyverbs`` (every test in tests/pyverbs/ uses it through tests/pyverbs/conftest.py).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--runslow", action="store_true", default=False, help="also run @slow tests")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if config.getoption("--runslow") or config.getoption("-m"):
        return
    skip = pytest.mark.skip(reason="slow: run with --runslow or -m slow")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip)


@pytest.fixture
def fresh_pyverbs() -> Iterator[None]:
    """``rdmasim.pyverbs`` forgets its default simulation before and after the test, so the
    devices (rxe0, rxe1, ...) a test opens by name are fresh."""
    import rdmasim.pyverbs as rp

    rp.reset()
    yield
    rp.reset()
