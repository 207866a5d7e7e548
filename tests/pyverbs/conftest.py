"""Every test of the pyverbs namespace starts on a fresh default simulation (``fresh_pyverbs``)."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _fresh_devices(fresh_pyverbs: None) -> None:
    """Devices opened by name are those of a new simulation."""
