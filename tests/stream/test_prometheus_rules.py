"""deploy/prometheus: the alert rules and configs pass the real promtool (Debian `prometheus`)."""

from __future__ import annotations

import shutil
import subprocess
import time
from pathlib import Path

import pytest
import yaml
from prometheus_client import CollectorRegistry, Counter, start_http_server
from prometheus_server import Prometheus

from stream.kafka.processes import free_port

PROM_DIR = Path(__file__).resolve().parents[2] / "deploy" / "prometheus"
ALERTS = {
    "TaskFailureRateAboveBaseline",
    "WorkerStalled",
    "MilestoneSuddenlyMissed",
    "ProductBugFailuresRising",
    "WorkerSilent",
    "DLQGrowing",
    "ShadowVerdictsDisagree",
    "ReleaseFailureRateRegressed",
    "RunsInterrupted",
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


def test_real_prometheus_fires_regression_alerts(tmp_path):
    """A real Prometheus (1 s scrape and rule intervals) scraping worker-like metrics: product-bug
    failures of a task with no history bring ProductBugFailuresRising and
    TaskFailureRateAboveBaseline to `firing` (no `for:` on them, default baseline)."""
    registry = CollectorRegistry()
    runs = Counter("trustlayer_runs_total", "runs", ["task", "status"], registry=registry)
    causes = Counter("trustlayer_failure_causes_total", "causes", ["task", "cause"],
                     registry=registry)
    for status in ("passed", "failed"):  # series start at 0, so the first failures count
        runs.labels("checkout", status)
    causes.labels("checkout", "product_bug")
    exporter_port = free_port()
    server, thread = start_http_server(exporter_port, addr="127.0.0.1", registry=registry)
    prometheus = Prometheus(tmp_path, f"127.0.0.1:{exporter_port}")

    def scraped_zeroes() -> bool:  # the counters' 0 was scraped, so every failure counts
        data = prometheus.api("query?query=count_over_time(trustlayer_runs_total%5B1m%5D)")
        return bool(data and data["result"]
                    and min(float(r["value"][1]) for r in data["result"]) >= 2)

    wanted = {"ProductBugFailuresRising", "TaskFailureRateAboveBaseline"}
    try:
        deadline = time.monotonic() + 45
        while time.monotonic() < deadline and not scraped_zeroes():
            assert prometheus.proc.poll() is None, prometheus.log_path.read_text()[-3000:]
            time.sleep(0.2)
        failed = 0
        while time.monotonic() < deadline and not wanted <= prometheus.firing():
            if failed < 10:
                runs.labels("checkout", "failed").inc()
                causes.labels("checkout", "product_bug").inc()
                failed += 1
            time.sleep(0.5)
        got = prometheus.firing()
    finally:
        prometheus.stop()
        server.shutdown()
    assert wanted <= got, prometheus.log_path.read_text()[-3000:]
