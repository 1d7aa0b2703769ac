"""Each failure and error named the moment it happens, with its duration and the end of its
report, instead of only in the summary at the end: a run that CI cuts off at its time limit
(a test that hangs until pytest-timeout fires, several times over) still names in its last
lines what failed and where it was stuck."""

from __future__ import annotations

import pytest

# the end of a report: for a pytest-timeout, the stack of the thread that was stuck
REPORT_TAIL_LINES = 25


@pytest.hookimpl(trylast=True)
def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if not report.failed:
        return
    config = _config
    # under pytest-xdist every worker's report reaches the controller, which prints it once
    if config is None or hasattr(config, "workerinput"):
        return
    terminal = config.pluginmanager.get_plugin("terminalreporter")
    if terminal is None:
        return
    tail = report.longreprtext.splitlines()[-REPORT_TAIL_LINES:]
    terminal.write_line("")
    terminal.write_line(f"!! {report.when.upper()} FAILED {report.nodeid} "
                        f"after {report.duration:.1f} s", red=True)
    for line in tail:
        terminal.write_line(f"!!   {line}")


_config: pytest.Config | None = None


def pytest_configure(config: pytest.Config) -> None:
    global _config
    _config = config
