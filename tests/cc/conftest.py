"""Fixtures of the congestion-control tests."""
from __future__ import annotations

from collections.abc import Iterator

import pytest

from rdmasim import cc


@pytest.fixture
def plugin_cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Compiled plug-ins in one cache for the session's tests, forgotten after each test."""
    monkeypatch.setenv("RDMASIM_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "cc-cache"))
    before = set(cc.plugin_names())
    yield
    for n in set(cc.plugin_names()) - before:
        cc.unregister_plugin(n)
