"""Fixtures for every test: the user's data folder is the test's own, no terminal size comes in from outside, and
Ctrl-C reaches the processes the tests start; the Ray tests run first, together, on one cluster."""

from __future__ import annotations

import signal
from pathlib import Path

import pytest
from hypothesis import settings

# Property tests check what, not how fast: a loaded CI machine stalls a worker for seconds, and Hypothesis's default
# deadline (200 ms an example) would fail a correct test. Loaded before any test module makes its own settings.
settings.register_profile("suite", deadline=None)
settings.load_profile("suite")

# A suite started from a background job of a non-interactive shell inherits SIGINT ignored, and an ignored signal
# stays ignored across exec: every `strawpot` a test starts would then ignore the Ctrl-C the test sends it and hang
# until its time limit. Python's own handler here makes the children start with the default action.
signal.signal(signal.SIGINT, signal.default_int_handler)


@pytest.fixture(autouse=True)
def _own_data_folder(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """`strawpot start` records its project in the data folder (for `strawpot ui`): never the user's real one."""
    monkeypatch.setenv("STRAWPOT_DATA_DIR", str(tmp_path / "strawpot-data"))


@pytest.fixture(autouse=True)
def _no_terminal_size(monkeypatch: pytest.MonkeyPatch) -> None:
    """COLUMNS and LINES are the launching terminal's business (pytest-xdist starts its workers with COLUMNS=80): a
    test that wants a width sets one, so a table's wrapping never depends on where or how the suite runs."""
    monkeypatch.delenv("COLUMNS", raising=False)
    monkeypatch.delenv("LINES", raising=False)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The Ray tests first, in their order: pytest-xdist gives the first worker the head of the list and steals from
    tails, so one worker runs them all on one test cluster (tests/_ray_cluster.py), stopped after the last."""
    items.sort(key=lambda item: item.get_closest_marker("ray") is None)


@pytest.hookimpl(trylast=True)
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> None:
    if item.get_closest_marker("ray") is not None:
        from tests._ray_cluster import stop_unless_next

        stop_unless_next(nextitem)
