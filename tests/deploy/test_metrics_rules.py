"""docker/prometheus/: the alert rules are well formed, name only metrics the server exports,
and pass `promtool check rules` and their unit tests (`promtool test rules`,
alerts_test.yml). promtool is Debian's `prometheus` package (scripts/test.sh installs it);
without it those two skip, except under CI=true, where they fail."""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest
import yaml

from leaderboard.common import prometheus
from tests.helpers import PROJECT_ROOT, UNDER_CI

RULES = PROJECT_ROOT / "docker" / "prometheus" / "alerts.yml"
PROMTOOL = shutil.which("promtool")
# Exported at scrape time (evalserver/metrics_endpoint.py StateCollector), not recorded in
# processes.
SCRAPE_TIME = {"evalserver_submissions", "evalserver_submission_oldest_seconds",
               "evalserver_queue_depth", "evalserver_metrics_source_up"}
NEEDS_PROMTOOL = pytest.mark.skipif(
    PROMTOOL is None and not UNDER_CI,
    reason="needs promtool (apt-get install prometheus)")


def _rules() -> list[dict[str, object]]:
    groups = yaml.safe_load(RULES.read_text())["groups"]
    return [rule for group in groups for rule in group["rules"]]


def _exported() -> set[str]:
    """Every series name the server exports (a histogram's _bucket, _count, _sum; a
    counter's _total)."""
    names = set(SCRAPE_TIME)
    for collector in (prometheus.HTTP_REQUEST_DURATION, prometheus.JOB_DURATION,
                      prometheus.JOB_FAILURES, prometheus.SUBMISSION_SCORED_LATENCY,
                      prometheus.SWEEP_REQUEUED, prometheus.SIGNIFICANCE_REFRESH_DURATION):
        for family in collector.describe():
            names |= {family.name + suffix for suffix in ("_total", "_bucket", "_count", "_sum")}
    return names


def test_every_alert_has_an_expression_a_duration_a_severity_and_words() -> None:
    rules = _rules()

    assert [rule["alert"] for rule in rules] == [
        "EvalserverQueueGrowing", "EvalserverJobStuck", "EvalserverServerFailures",
        "EvalserverFailureSpike", "EvalserverMetricsSourceDown", "EvalserverTargetDown"]
    for rule in rules:
        assert set(rule) == {"alert", "expr", "for", "labels", "annotations"}, rule["alert"]
        assert re.fullmatch(r"\d+[smh]", str(rule["for"])), rule["alert"]
        assert rule["labels"] in ({"severity": "warning"}, {"severity": "critical"})
        assert set(rule["annotations"]) == {"summary", "description"}  # type: ignore[arg-type]
        # each alert says where to read what to do
        assert "docs/operations-metrics.md" in rule["annotations"]["description"]  # type: ignore[index]


def test_the_alerts_name_only_metrics_the_server_exports() -> None:
    exported = _exported()
    named = {name for rule in _rules()
             for name in re.findall(r"\b(evalserver_[a-z_]+)", str(rule["expr"]))}

    assert named and named <= exported, named - exported
    docs = (PROJECT_ROOT / "docs" / "operations-metrics.md").read_text()
    for rule in _rules():  # each alert has its section in the docs
        assert f"### {rule['alert']}" in docs, rule["alert"]


def _promtool(*args: str) -> subprocess.CompletedProcess[str]:
    if PROMTOOL is None:  # only under CI=true
        pytest.fail("promtool is not installed (apt-get install prometheus); CI=true: the "
                    "rules checks never skip", pytrace=False)
    return subprocess.run([PROMTOOL, *args], cwd=RULES.parent, capture_output=True, text=True,
                          timeout=120)


@NEEDS_PROMTOOL
def test_promtool_checks_the_rules() -> None:
    done = _promtool("check", "rules", "alerts.yml")

    assert done.returncode == 0, done.stdout + done.stderr
    assert "SUCCESS: 6 rules found" in done.stdout


@NEEDS_PROMTOOL
def test_the_alerts_fire_on_their_unit_tests_series() -> None:
    done = _promtool("test", "rules", "alerts_test.yml")

    assert done.returncode == 0, done.stdout + done.stderr
    assert "SUCCESS" in done.stdout
