"""End to end: a real Prometheus (1 s scrape and rule intervals, the repo's alert rules)
scrapes a real worker on the real broker while runs with product bugs are replayed, and the
regression alert reaches `firing`."""
from __future__ import annotations

import json
import shutil
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest
import yaml

from stream.broker import free_port, stop_process
from stream.cli import topic_names
from stream.topics import ensure_topics
from streamkit import Worker, example_events, interleave, model, publish_events, renamed, unique

RULES = Path(__file__).resolve().parents[2] / "deploy" / "prometheus" / "alerts.yml"


class Prometheus:
    """The Debian `prometheus` server on a free port, scraping one target."""

    def __init__(self, directory: Path, target: str):
        binary = shutil.which("prometheus")
        if not binary:
            pytest.fail("prometheus not found: apt-get install -y prometheus", pytrace=False)
        shutil.copy(RULES, directory / "alerts.yml")
        (directory / "prometheus.yml").write_text(yaml.safe_dump({
            "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
            "rule_files": ["alerts.yml"],
            "scrape_configs": [{"job_name": "trustlayer-worker",
                                "static_configs": [{"targets": [target]}]}]}))
        self.port, self.log_path = free_port(), directory / "prometheus.log"
        self.log = open(self.log_path, "wb")
        self.proc = subprocess.Popen(
            [binary, f"--config.file={directory / 'prometheus.yml'}",
             f"--storage.tsdb.path={directory / 'data'}",
             f"--web.listen-address=127.0.0.1:{self.port}"],
            cwd=directory, stdout=self.log, stderr=subprocess.STDOUT)

    def api(self, path: str) -> dict | None:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/api/v1/{path}",
                                        timeout=2) as answer:
                return json.load(answer)["data"]
        except OSError:
            return None

    def value(self, query: str) -> float | None:
        data = self.api("query?query=" + urllib.request.quote(query))
        return float(data["result"][0]["value"][1]) if data and data["result"] else None

    def firing(self) -> set[str]:
        alerts = (self.api("alerts") or {}).get("alerts", [])
        return {a["labels"]["alertname"] for a in alerts if a["state"] == "firing"}

    def stop(self) -> None:
        stop_process(self.proc)
        self.log.close()


def wait_for(condition, timeout: float, what: str, *logs: Path) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.5)
    tails = "\n".join(path.read_text(errors="replace")[-2000:] for path in logs)
    raise AssertionError(f"{what} not within {timeout} s\n{tails}")


def test_product_bug_runs_bring_the_regression_alert_to_firing(kafka, tmp_path):
    prefix = unique("alerts")
    ensure_topics(kafka.bootstrap, topic_names(prefix))
    models = tmp_path / "models"
    models.mkdir()
    model().save(models / f"{model().task}.json")
    metrics_port = free_port()
    worker = Worker(kafka.bootstrap, prefix, unique("app"), models, tmp_path / "worker.log",
                    "--metrics-port", str(metrics_port))
    prometheus = Prometheus(tmp_path, f"127.0.0.1:{metrics_port}")
    task = model().task
    failed_series = f'trustlayer_runs_total{{task="{task}",status="failed"}}'
    try:
        worker.wait_ready()
        # the worker's zero-valued series were scraped, so every failure counts as a rise
        wait_for(lambda: (prometheus.value(f"count_over_time({failed_series}[1m])") or 0) >= 2, 60,
                 "first scrapes of the worker", prometheus.log_path, worker.log)
        product_bugs = [run for run in example_events()
                        if run[0]["run_id"] in ("jl-save-textfile-test-11", "jl-save-textfile-test-16")]
        runs = [renamed(run, f"{prefix}-{k}-{run[0]['run_id']}") for k in range(3)
                for run in product_bugs]
        publish_events(kafka.bootstrap, f"{prefix}.events", interleave(runs))
        wait_for(lambda: (prometheus.value(
            f'sum(trustlayer_failure_causes_total{{task="{task}",cause="product_bug"}})') or 0)
            >= len(runs), 120, "the worker's product_bug failures", worker.log)
        # the two alerts' rules are evaluated in turn, one may fire a cycle after the other
        wanted = {"ProductBugFailuresRising", "TaskFailureRateAboveBaseline"}
        wait_for(lambda: wanted <= prometheus.firing(), 60, f"{sorted(wanted)} firing",
                 prometheus.log_path, worker.log)
    finally:
        prometheus.stop()
        worker.stop()
