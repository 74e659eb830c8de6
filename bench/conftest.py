"""Prints the ratio lines (bench/ratios.py) at the end of `make bench`, and fails the run when
one misses its goal."""

import pytest
import ratios


def pytest_terminal_summary(terminalreporter):
    if not ratios.LINES:
        return
    terminalreporter.section("ratios (each against a baseline measured in the same run)")
    for line in ratios.LINES:
        terminalreporter.write_line(line.line())


def pytest_sessionfinish(session, exitstatus):
    if any(not line.passed for line in ratios.LINES) and exitstatus == 0:
        session.exitstatus = 1


@pytest.fixture
def seam():
    """As in tests/conftest.py: `seam.user_message_sender = fn` swaps a lindy.seams hook until the
    benchmark ends (tests/seams.py)."""
    from tests.seams import Seam, replaced

    with replaced():
        yield Seam()
