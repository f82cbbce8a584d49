"""Shared test hygiene."""

import pytest


@pytest.fixture(autouse=True)
def _no_freeze_left_behind():
    """A test that fails inside a SweepGuard trial leaves the guard busy and the process frozen
    (gc.freeze, graphguard.runtime.sweep_measure.FREEZE) until the guard is collected: give the process
    its collections back, so the next test starts as a fresh one would."""
    yield
    from graphguard.runtime.sweep_measure import FREEZE

    if FREEZE.frozen:
        FREEZE.busy.clear()
        FREEZE.thaw()
