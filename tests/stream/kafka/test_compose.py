"""docker-compose.yml, deploy/Dockerfile and the Grafana files: structure checks (no Docker
here)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from stream.kafka.broker import KAFKA_VERSION
from stream.kafka.processes import free_port

ROOT = Path(__file__).resolve().parents[3]
GRAFANA = ROOT / "deploy" / "grafana"
METRICS = {
    "trustlayer_events_total",
    "trustlayer_runs_total",
    "trustlayer_failures_total",
    "trustlayer_failure_causes_total",
    "trustlayer_unknown_states_total",
    "trustlayer_dlq_records_total",
    "trustlayer_verdict_latency_seconds",
    "trustlayer_open_runs",
    "trustlayer_model_version",
    "trustlayer_stalls_total",
    "trustlayer_release_runs_total",
    "trustlayer_release_rank",
}


@pytest.fixture(scope="module")
def compose() -> dict:
    return yaml.safe_load((ROOT / "docker-compose.yml").read_text())


@pytest.fixture(scope="module")
def dashboard() -> dict:
    return json.loads((GRAFANA / "trustlayer-dashboard.json").read_text())


def mounts(service: dict) -> dict[str, str]:
    """container path -> host path, for the bind mounts of a service."""
    out = {}
    for v in service.get("volumes", []):
        v = re.sub(r"\$\{[A-Za-z_]+:-([^}]*)\}", r"\1", v)  # ${VAR:-default} -> default
        host, container = v.split(":")[:2]
        out[container] = host
    return out


def host_path(p: str) -> Path:
    return (ROOT / p).resolve()


def test_services(compose):
    assert {"kafka", "worker", "prometheus", "grafana"} <= set(compose["services"])


def test_kafka_is_official_image_in_kraft_mode(compose):
    kafka = compose["services"]["kafka"]
    image, tag = kafka["image"].split(":")
    assert image == "apache/kafka"
    assert tag == KAFKA_VERSION  # the version the embedded broker (tests, demo) runs
    env = kafka["environment"]
    assert set(env["KAFKA_PROCESS_ROLES"].split(",")) == {"broker", "controller"}
    assert env["KAFKA_CONTROLLER_QUORUM_VOTERS"].startswith(f"{env['KAFKA_NODE_ID']}@kafka:")
    assert "CONTROLLER" in env["KAFKA_CONTROLLER_LISTENER_NAMES"]
    assert "PLAINTEXT://kafka:9092" in env["KAFKA_ADVERTISED_LISTENERS"]
    assert re.fullmatch(r"[A-Za-z0-9_-]{22}", env["CLUSTER_ID"])
    assert not any("ZOOKEEPER" in k for k in env)
    assert str(env["KAFKA_AUTO_CREATE_TOPICS_ENABLE"]).lower() == "false"
    assert int(env["KAFKA_MESSAGE_MAX_BYTES"]) >= 10 * 1024 * 1024
    assert "healthcheck" in kafka


def test_worker_builds_from_deploy_dockerfile_and_needs_kafka(compose):
    worker = compose["services"]["worker"]
    assert worker["build"]["dockerfile"] == "deploy/Dockerfile"
    assert host_path(worker["build"]["context"]) == ROOT
    dockerfile = (ROOT / worker["build"]["dockerfile"]).read_text()
    assert re.search(r"^FROM python:3\.11-slim", dockerfile, re.M)
    assert 'pip install -c requirements.lock ".[stream]"' in dockerfile
    assert "trustlayer worker --broker kafka:9092 --models /models" in " ".join(worker["command"])
    assert "kafka" in worker["depends_on"]
    assert "127.0.0.1:9108:9108" in worker["ports"]
    assert "/models" in mounts(worker)


def test_every_published_port_is_on_the_hosts_loopback_only(compose):
    published = [(name, port) for name, service in compose["services"].items()
                 for port in service.get("ports", [])]
    assert {name for name, _ in published} == {"kafka", "worker", "prometheus", "grafana"}
    for name, port in published:
        assert str(port).startswith("127.0.0.1:"), f"{name}: {port} is open to the network"


def test_prometheus_cannot_be_stopped_or_reconfigured_over_http(compose):
    command = compose["services"]["prometheus"]["command"]
    assert not any(arg.startswith(("--web.enable-lifecycle", "--web.enable-admin-api"))
                   for arg in command), command


def test_grafana_shows_the_dashboard_read_only_and_has_no_default_admin(compose):
    grafana = compose["services"]["grafana"]["environment"]
    env = {k.lower(): str(v).lower() for k, v in grafana.items()}
    assert env["gf_auth_anonymous_enabled"] == "true"
    assert env["gf_auth_anonymous_org_role"] == "viewer"
    assert env["gf_auth_disable_login_form"] == "true" and env["gf_auth_disable_login"] == "true"
    assert env["gf_auth_basic_enabled"] == "false" and env["gf_users_allow_sign_up"] == "false"
    assert "gf_security_admin_password" not in env  # no admin/admin to log in with


def test_the_worker_signs_models_with_a_key_kept_in_a_volume(compose):
    worker = compose["services"]["worker"]
    assert worker["environment"]["TRUSTLAYER_STATE_DIR"] == "/state"
    assert worker["environment"]["TRUSTLAYER_MODEL_KEY"] == "${TRUSTLAYER_MODEL_KEY:-}"
    assert "state:/state" in worker["volumes"] and "state" in compose["volumes"]
    dockerfile = (ROOT / worker["build"]["dockerfile"]).read_text()
    assert "chown trustlayer /models /state" in dockerfile


def test_worker_metrics_listen_on_loopback_unless_told(monkeypatch):
    from stream.commands.cli import worker_config
    from stream.judging.metrics import Metrics
    from trustlayer.cli import build_parser

    monkeypatch.delenv("TRUSTLAYER_METRICS_ADDR", raising=False)
    args = build_parser().parse_args(["worker"])
    assert worker_config(args).metrics_addr == "127.0.0.1"
    assert Metrics().serve(free_port())[0] == "127.0.0.1"
    monkeypatch.setenv("TRUSTLAYER_METRICS_ADDR", "0.0.0.0")
    assert worker_config(build_parser().parse_args(["worker"])).metrics_addr == "0.0.0.0"


def test_prometheus_mounts_rules_and_scrapes_the_worker(compose):
    prom = compose["services"]["prometheus"]
    assert prom["image"].startswith("prom/prometheus")
    host = host_path(mounts(prom)["/etc/prometheus"])
    assert host == ROOT / "deploy" / "prometheus"
    [config_arg] = [a for a in prom["command"] if a.startswith("--config.file=")]
    config_path = Path(config_arg.split("=", 1)[1])
    assert config_path.parent == Path("/etc/prometheus")
    config = yaml.safe_load((host / config_path.name).read_text())
    for rule_file in config["rule_files"]:
        assert (host / rule_file).is_file(), rule_file
    assert "alerts.yml" in config["rule_files"]
    targets = [t for job in config["scrape_configs"] for sc in job["static_configs"]
               for t in sc["targets"]]
    assert "worker:9108" in targets


def test_grafana_provisioning_paths_exist(compose):
    grafana = compose["services"]["grafana"]
    assert grafana["image"].startswith("grafana/grafana")
    m = mounts(grafana)
    provisioning = host_path(m["/etc/grafana/provisioning"])
    assert provisioning == GRAFANA / "provisioning"
    datasources = yaml.safe_load((provisioning / "datasources" / "prometheus.yml").read_text())
    [ds] = datasources["datasources"]
    assert ds["type"] == "prometheus" and ds["url"] == "http://prometheus:9090"
    providers = yaml.safe_load((provisioning / "dashboards" / "trustlayer.yml").read_text())
    [provider] = providers["providers"]
    dash_dir = provider["options"]["path"]
    dashboards = {c: h for c, h in m.items() if c.startswith(dash_dir + "/")}
    assert dashboards, f"no dashboard mounted under {dash_dir}"
    for host in dashboards.values():
        assert host_path(host).is_file(), host
        json.loads(host_path(host).read_text())


def test_bind_mounts_exist(compose):
    for name, service in compose["services"].items():
        for container, host in mounts(service).items():
            if host.startswith((".", "/")):
                assert host_path(host).exists(), f"{name}: {host} -> {container}"


def test_the_workers_start_script_learns_every_example_and_refines(compose, tmp_path):
    """The worker's command, run here with the repo's examples and a free port in place of
    kafka:9092: it learns a model per example task, then starts the worker with --train
    for each, which (no broker there) stops with the one-line error and exit code 2."""
    [shell, flags, script] = compose["services"]["worker"]["command"]
    assert (shell, flags) == ("sh", "-ec")
    examples = mounts(compose["services"]["worker"])["/examples"]
    address = f"127.0.0.1:{free_port()}"
    script = (script.replace("$$", "$").replace("/examples", str(host_path(examples)))
              .replace("/models", str(tmp_path)).replace("kafka:9092", address))
    bin_dir = Path(sys.executable).parent
    run = subprocess.run([shell, flags, script], capture_output=True, text=True, timeout=300,
                         env={**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}"})
    assert run.returncode == 2, run.stderr[-3000:]
    assert run.stderr.strip().splitlines()[-1].startswith(
        f"trustlayer worker: no Kafka broker answers at {address}"), run.stderr[-3000:]
    sets = sorted(p.parent.name for p in host_path(examples).glob("*/train"))
    assert sorted(p.stem for p in tmp_path.glob("*.json")) == sets and "jupyter" in sets
    for model in tmp_path.glob("*.json"):
        assert json.loads(model.read_text())["task"]


# -- the dashboard ------------------------------------------------------------------------

def queries(dashboard: dict) -> list[tuple[str, str]]:
    out = []
    for panel in dashboard["panels"]:
        if panel["type"] == "row":
            continue
        assert panel.get("targets"), f"panel {panel['title']!r} has no query"
        out += [(panel["title"], t["expr"]) for t in panel["targets"]]
    return out


def metric_names(expr: str) -> set[str]:
    names = set(re.findall(r"\btrustlayer_[a-z_]+", expr))
    return {re.sub(r"_(bucket|sum|count)$", "", n)
            if n.startswith("trustlayer_verdict_latency") else n for n in names}


def test_dashboard_parses_and_queries_use_worker_metrics(dashboard):
    assert 36 <= dashboard["schemaVersion"] <= 41
    assert dashboard["uid"] and dashboard["title"]
    ids = [p["id"] for p in dashboard["panels"]]
    assert len(ids) == len(set(ids))
    used = set()
    for title, expr in queries(dashboard):
        names = metric_names(expr)
        assert names, f"{title!r}: {expr} references no trustlayer metric"
        assert names <= METRICS, f"{title!r}: unknown metric(s) {names - METRICS}"
        used |= names
    assert used == METRICS, f"metrics without a panel: {METRICS - used}"


def test_dashboard_has_the_wanted_panels(dashboard):
    exprs = "\n".join(e for _, e in queries(dashboard))
    assert "histogram_quantile(0.5," in exprs and "histogram_quantile(0.99," in exprs
    assert "trustlayer_verdict_latency_seconds_bucket" in exprs
    assert "sum by (status)" in exprs and "sum by (cause)" in exprs and "missing" in exprs


def test_dashboard_queries_are_valid_promql(dashboard, tmp_path):
    """Grafana's variables replaced, every query must parse (checked by promtool as rules)."""
    promtool = shutil.which("promtool")
    if not promtool:
        pytest.fail("promtool not found: apt-get install -y prometheus", pytrace=False)
    rules = []
    for i, (_, expr) in enumerate(queries(dashboard)):
        expr = (expr.replace("$__rate_interval", "1m").replace("$__range", "1h")
                .replace("$task", ".*"))
        rules.append({"record": f"dashboard:query_{i}", "expr": expr})
    path = tmp_path / "dashboard_rules.yml"
    path.write_text(yaml.safe_dump({"groups": [{"name": "dashboard", "rules": rules}]}))
    res = subprocess.run([promtool, "check", "rules", str(path)], capture_output=True, text=True)
    assert res.returncode == 0, res.stdout + res.stderr
