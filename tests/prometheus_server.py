"""The Debian `prometheus` server, started on a free port with the repo's alert rules, for
the tests that check the rules against real scrapes."""
from __future__ import annotations

import json
import shutil
import subprocess
import urllib.request
from pathlib import Path

import pytest
import yaml
from devsets import REPO

from stream.kafka.processes import free_port, stop_process


class Prometheus:
    """The Debian `prometheus` server on a free port with the repo's alert rules, scraping
    one target every second."""

    def __init__(self, directory: Path, target: str):
        binary = shutil.which("prometheus")
        if not binary:
            pytest.fail("prometheus not found: apt-get install -y prometheus (don't start "
                        "its service)", pytrace=False)
        shutil.copy(REPO / "deploy" / "prometheus" / "alerts.yml", directory / "alerts.yml")
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
