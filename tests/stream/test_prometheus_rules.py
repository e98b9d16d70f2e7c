"""deploy/prometheus: the alert rules and configs pass the real promtool (Debian `prometheus`)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

PROM_DIR = Path(__file__).resolve().parents[2] / "deploy" / "prometheus"
ALERTS = {
    "TaskFailureRateAboveBaseline",
    "MilestoneSuddenlyMissed",
    "ProductBugFailuresRising",
    "WorkerSilent",
    "DLQGrowing",
}


@pytest.fixture(scope="module")
def promtool() -> str:
    path = shutil.which("promtool")
    if not path:
        pytest.fail(
            "promtool not found: install the Debian package `prometheus` "
            "(apt-get install -y prometheus; do not start its service)",
            pytrace=False,
        )
    return path


def run(*cmd: str) -> subprocess.CompletedProcess[str]:
    res = subprocess.run(cmd, cwd=PROM_DIR, capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, f"{' '.join(cmd)} failed:\n{res.stdout}\n{res.stderr}"
    return res


def test_promtool_check_rules(promtool):
    run(promtool, "check", "rules", "alerts.yml")


@pytest.mark.parametrize("config", ["prometheus.yml", "prometheus.compose.yml"])
def test_promtool_check_config(promtool, config):
    run(promtool, "check", "config", config)


def test_promtool_test_rules(promtool):
    res = run(promtool, "test", "rules", "tests/alerts_test.yml")
    assert "SUCCESS" in res.stdout + res.stderr


def test_every_alert_has_severity_annotations_and_firing_and_silent_tests():
    rules = yaml.safe_load((PROM_DIR / "alerts.yml").read_text())
    alerts = [r for g in rules["groups"] for r in g["rules"] if "alert" in r]
    assert {a["alert"] for a in alerts} == ALERTS
    for a in alerts:
        assert a["labels"]["severity"] in {"critical", "warning"}, a["alert"]
        assert a["annotations"]["summary"] and a["annotations"]["description"], a["alert"]

    tests = yaml.safe_load((PROM_DIR / "tests" / "alerts_test.yml").read_text())
    fires, silent = set(), set()
    for case in tests["tests"]:
        for t in case.get("alert_rule_test", []):
            (fires if t.get("exp_alerts") else silent).add(t["alertname"])
    assert fires == ALERTS and silent == ALERTS


def test_metrics_scraped_from_worker_port():
    conf = yaml.safe_load((PROM_DIR / "prometheus.yml").read_text())
    assert conf["rule_files"] == ["alerts.yml"]
    [job] = conf["scrape_configs"]
    assert job["static_configs"][0]["targets"] == ["localhost:9108"]
