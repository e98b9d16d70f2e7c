"""Verdicts out as OpenTelemetry `gen_ai.evaluation.result` events: their attributes and
trace link through the SDK's in-memory exporter, and `trustlayer validate --otel-verdicts`
sending them over OTLP/HTTP to a receiver the test runs (protobuf, as a collector reads
them), each on the trace of the agent run it judges. Off by default."""
from __future__ import annotations

import json
import subprocess
import sys

from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter, SimpleLogRecordProcessor
from otel_spans import BAD, GOOD, write_genai
from otlp_receiver import Receiver

from trustlayer.observe.traces import read_runs
from trustlayer.otel.verdicts import VerdictExporter

RECORD = {"run_id": "conv-1", "task": "config-fixer", "verdict": "fail", "coverage": 0.25,
          "reason": "'tests pass' never reached", "cause": "product_bug", "final": True}


def test_a_verdict_is_an_evaluation_event_on_the_runs_trace():
    memory = InMemoryLogRecordExporter()
    provider = LoggerProvider()
    provider.add_log_record_processor(SimpleLogRecordProcessor(memory))
    exporter = VerdictExporter(provider)
    exporter.emit(RECORD, ("0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331"))
    exporter.emit({**RECORD, "run_id": "plain", "verdict": "pass", "coverage": 1.0,
                   "reason": None, "cause": None})
    linked, plain = [log.log_record for log in memory.get_finished_logs()]
    assert linked.event_name == "gen_ai.evaluation.result"
    assert dict(linked.attributes) == {
        "gen_ai.evaluation.name": "trustlayer.verdict", "gen_ai.evaluation.score.label": "fail",
        "gen_ai.evaluation.score.value": 0.25,
        "gen_ai.evaluation.explanation": "'tests pass' never reached",
        "gen_ai.conversation.id": "conv-1", "trustlayer.task": "config-fixer",
        "trustlayer.cause": "product_bug"}
    assert f"{linked.trace_id:032x}" == "0af7651916cd43dd8448eb211c80319c"
    assert f"{linked.span_id:016x}" == "b7ad6b7169203331"
    assert plain.attributes["gen_ai.evaluation.score.label"] == "pass"
    assert "gen_ai.evaluation.explanation" not in plain.attributes
    assert not plain.trace_id


def trustlayer(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "trustlayer.cli", "-q", *args],
                          capture_output=True, text=True, timeout=120, check=False)


def test_validate_sends_verdicts_to_an_otlp_http_receiver(tmp_path):
    for number in range(3):
        write_genai(tmp_path / "train.jsonl", f"ok-{number}", GOOD)
    write_genai(tmp_path / "test.jsonl", "new-ok", GOOD)
    write_genai(tmp_path / "test.jsonl", "broken", BAD)
    for name in ("train", "test"):
        assert trustlayer("import", "otel", str(tmp_path / f"{name}.jsonl"), "-o",
                          str(tmp_path / name)).returncode == 0
    assert trustlayer("learn", str(tmp_path / "train"), "-o", str(tmp_path / "m.json")
                      ).returncode == 0
    receiver = Receiver()
    try:
        quiet = trustlayer("validate", str(tmp_path / "m.json"), str(tmp_path / "test"))
        assert quiet.returncode == 1 and receiver.requests == []  # off by default
        judged = trustlayer("validate", str(tmp_path / "m.json"), str(tmp_path / "test"),
                            "--format", "json", "--otel-verdicts", receiver.url)
    finally:
        receiver.server.shutdown()
    assert judged.returncode == 1, judged.stderr
    verdicts = {r["run_id"]: r for r in map(json.loads, judged.stdout.splitlines())}
    traces = {run.run_id: run.end.meta["otel"]["trace_id"]
              for run in read_runs([tmp_path / "test"])}
    events = receiver.events()
    assert set(events) == {"new-ok", "broken"} and len(receiver.records()) == 2
    for run_id, (attributes, record) in events.items():
        assert record.event_name == "gen_ai.evaluation.result"
        assert attributes["gen_ai.evaluation.name"].string_value == "trustlayer.verdict"
        assert attributes["gen_ai.evaluation.score.label"].string_value == \
            verdicts[run_id]["verdict"]
        assert attributes["gen_ai.evaluation.score.value"].double_value == \
            verdicts[run_id]["coverage"]
        assert record.trace_id.hex() == traces[run_id]
    assert events["broken"][0]["gen_ai.evaluation.explanation"].string_value == \
        verdicts["broken"]["reason"]
