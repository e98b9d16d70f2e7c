"""Verdicts exported with ``validate --otel-verdicts`` fail loudly: an endpoint that is down
or refuses them makes the command exit 3 and say so, a malformed URL is refused before
anything is judged; a collector that takes them leaves the exit code to the verdicts."""
from __future__ import annotations

from pathlib import Path

import pytest
from devsets import EXAMPLES
from otlp_receiver import Receiver

from stream.kafka.processes import free_port
from trustlayer.cli import main
from trustlayer.errors import EXIT_BAD_INPUT, EXIT_FAIL, EXIT_UNDELIVERED

TRIP = EXAMPLES / "tool-calling"


@pytest.fixture(scope="module")
def model(tmp_path_factory) -> str:
    path = tmp_path_factory.mktemp("delivery") / "trip.json"
    assert main(["-q", "learn", str(TRIP / "train"), "-o", str(path)]) == 0
    return str(path)


def validate(model: str, url: str, runs: Path = TRIP / "test") -> int:
    return main(["-q", "validate", model, str(runs), "--format", "json",
                 "--otel-verdicts", url])


def test_an_endpoint_that_is_down_fails_the_command(model, capsys):
    url = f"http://127.0.0.1:{free_port()}/v1/logs"
    assert validate(model, url) == EXIT_UNDELIVERED
    assert f"verdicts not delivered to {url}" in capsys.readouterr().err


def test_an_endpoint_that_refuses_the_verdicts_fails_the_command(model, capsys):
    receiver = Receiver()
    wrong_path = receiver.url.replace("/v1/logs", "/v1/traces")  # answered 415
    assert validate(model, wrong_path) == EXIT_UNDELIVERED
    assert "verdicts not delivered" in capsys.readouterr().err and not receiver.requests


def test_delivered_verdicts_leave_the_exit_code_to_the_verdicts(model, capsys):
    receiver = Receiver()
    assert validate(model, receiver.url) == EXIT_FAIL  # some test runs fail
    assert "not delivered" not in capsys.readouterr().err
    assert len(receiver.events()) == len(list((TRIP / "test").glob("*.jsonl")))


@pytest.mark.parametrize("url", ["collector:4318", "ftp://collector/v1/logs", "http://",
                                 "http://collector:notaport/v1/logs"])
def test_a_malformed_url_is_refused_before_judging(model, url, capsys):
    assert validate(model, url) == EXIT_BAD_INPUT
    out, err = capsys.readouterr()
    assert out == "" and f"--otel-verdicts {url}: not an http(s) URL with a host" in err


def test_a_runner_librarys_run_is_linked_to_its_traceparent(tmp_path):
    from trustlayer.observe.trace_context import new_traceparent, parse_traceparent
    from trustlayer.runner import Run, TraceDir

    contexts = {}
    for name in ("train", "test"):
        with TraceDir(tmp_path / name) as sink:
            for number in range(3 if name == "train" else 1):
                contexts[f"{name}-{number}"] = new_traceparent()
                with Run("greet", sink, f"{name}-{number}",
                         meta={"traceparent": contexts[f"{name}-{number}"]}) as run:
                    run.state(text="Hello, who is there?")
                    run.action("type", "name", "Ada")
                    run.state(text="Welcome, Ada")
                    run.end("success")
    assert main(["-q", "learn", str(tmp_path / "train"), "-o", str(tmp_path / "m.json")]) == 0
    receiver = Receiver()
    assert validate(str(tmp_path / "m.json"), receiver.url, tmp_path / "test") == 0
    [(attributes, record)] = receiver.events().values()
    trace_id, _ = parse_traceparent(contexts["test-0"])
    assert record.trace_id.hex() == trace_id
