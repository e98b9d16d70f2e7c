"""`trustlayer import otel`: span files written by the real OpenTelemetry SDK, in the GenAI
semantic conventions and in OpenInference, become runs that `learn` and `validate` accept;
a model learned from converted successful runs fails a converted failing one. Bad span
files are one line with the file and line, exit 2."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from otel_spans import BAD, GOOD, WRITERS, span_writer, write_genai

from trustlayer.observe.traces import read_run, read_runs


def trustlayer(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "trustlayer.cli", "-q", *args],
                          capture_output=True, text=True, timeout=120, check=False)


@pytest.mark.parametrize("convention", sorted(WRITERS))
def test_converted_runs_learn_and_the_failing_one_fails(tmp_path, convention):
    write = WRITERS[convention]
    for number in range(3):
        write(tmp_path / "train.jsonl", f"conv-ok-{number}", GOOD)
    write(tmp_path / "test.jsonl", "conv-new-ok", GOOD)
    write(tmp_path / "test.jsonl", "conv-broken", BAD)
    for name in ("train", "test"):
        done = trustlayer("import", "otel", str(tmp_path / f"{name}.jsonl"), "-o",
                          str(tmp_path / "runs" / name))
        assert done.returncode == 0, done.stderr
    assert "imported 3 runs (27 events)" in trustlayer(
        "import", "otel", str(tmp_path / "train.jsonl"), "-o", str(tmp_path / "again")).stderr
    learned = trustlayer("learn", str(tmp_path / "runs" / "train"), "-o", str(tmp_path / "m.json"))
    assert learned.returncode == 0, learned.stderr
    judged = trustlayer("validate", str(tmp_path / "m.json"), str(tmp_path / "runs" / "test"),
                        "--format", "json")
    verdicts = {r["run_id"]: r for r in map(json.loads, judged.stdout.splitlines())}
    assert verdicts["conv-new-ok"]["verdict"] == "pass", verdicts["conv-new-ok"]
    assert verdicts["conv-broken"]["verdict"] == "fail"
    assert judged.returncode == 1


def test_a_converted_run_holds_tools_results_messages_and_the_rest_in_meta(tmp_path):
    write_genai(tmp_path / "spans.jsonl", "conv/7", GOOD, extra={"app.tenant": "acme"})
    assert trustlayer("import", "otel", str(tmp_path), "-o", str(tmp_path / "runs")
                      ).returncode == 0
    run = read_run(tmp_path / "runs" / "conv_7.jsonl")
    assert run.task == "config-fixer"
    assert [e.kind for e in run.events] == ["action", "state"] * 3 + ["state", "action", "end"]
    write = run.events[2]
    assert write.action.target == "write_file" and write.action.value == "config.ini"
    assert write.action.args == {"path": "config.ini", "content": "debug = false"}
    assert write.action.signature() == "tool:write_file:config.ini"
    assert run.events[3].observation.text == "wrote config.ini"
    prompt, said = run.events[6].observation, run.events[7].action
    assert prompt.text == "Here is the screen." and prompt.screenshot is not None
    assert (said.type, said.target, said.value) == ("message", "user", GOOD[-1])
    assert run.events[0].ts < run.events[1].ts <= run.events[-1].ts
    otel = run.end.meta["otel"]
    assert otel["attributes"] == {"app.tenant": "acme"} and len(otel["trace_id"]) == 32
    assert write.meta["otel"]["attributes"] == {"gen_ai.tool.call.id": "call-1"}


def test_conversations_and_traces_make_runs(tmp_path):
    """Two traces of one conversation are one run; a trace without one is its own."""
    write_genai(tmp_path / "a.jsonl", "same", GOOD[:1] + GOOD[-1:])
    write_genai(tmp_path / "b.jsonl", "same", GOOD[1:])
    assert trustlayer("import", "otel", str(tmp_path), "-o", str(tmp_path / "runs")
                      ).returncode == 0
    [run] = read_runs([tmp_path / "runs"])
    assert [e.action.target for e in run.events if e.kind == "action"] == \
        ["read_file", "user", "write_file", "run_tests", "user"]


@pytest.mark.parametrize("content, problem", [
    ('{"resourceSpans": [', "not valid JSON"),
    ('{"hello": 1}\n', "not an OTLP/JSON trace export (no 'resourceSpans')"),
    ('{"resourceSpans": [{"scopeSpans": [{"spans": [{"traceId": "zz"}]}]}]}\n',
     "malformed OTLP span"),
    (json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [{
        "traceId": "0102030405060708090a0b0c0d0e0f10", "spanId": "0102030405060708",
        "name": "GET /", "startTimeUnixNano": "1"}]}]}]}) + "\n",
     "no span of the GenAI or OpenInference conventions"),
    ("[" * 100000 + "\n", "JSON nested too deeply"),
])
def test_a_span_file_that_makes_no_run_is_one_line_and_exit_2(tmp_path, content, problem):
    (tmp_path / "bad.jsonl").write_text('{"resourceSpans": []}\n' + content)
    done = trustlayer("import", "otel", str(tmp_path / "bad.jsonl"), "-o", str(tmp_path / "o"))
    assert done.returncode == 2
    assert done.stderr.startswith(f"trustlayer import: error: {tmp_path / 'bad.jsonl'}:2: ")
    assert problem in done.stderr and len(done.stderr.splitlines()) == 1


def test_an_agent_span_with_nothing_done_is_refused(tmp_path):
    provider, spans = span_writer(tmp_path / "empty.jsonl")
    with spans.start_as_current_span("invoke_agent idle", attributes={
            "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "idle"}):
        pass
    provider.shutdown()
    done = trustlayer("import", "otel", str(tmp_path / "empty.jsonl"), "-o", str(tmp_path / "o"))
    assert done.returncode == 2 and "no tool calls or agent messages" in done.stderr


def test_conversations_alike_once_file_safe_stay_three_runs(tmp_path):
    """`conv/42`, `conv:42` and `conv 42` are one file name apart: each gets a stable
    suffix, the count printed is the runs found, and the failing one is still there."""
    for conversation, steps in (("conv/42", BAD), ("conv:42", GOOD), ("conv 42", GOOD)):
        write_genai(tmp_path / "spans.jsonl", conversation, steps)
    imported = subprocess.run([sys.executable, "-m", "trustlayer.cli", "import", "otel",
                               str(tmp_path / "spans.jsonl"), "-o", str(tmp_path / "runs")],
                              capture_output=True, text=True, timeout=120, check=False)
    assert imported.returncode == 0, imported.stderr
    assert imported.stderr.startswith("imported 3 runs")
    runs = read_runs([tmp_path / "runs"])
    assert len({run.run_id for run in runs}) == 3
    assert all(run.run_id.startswith("conv_42-") for run in runs)
    failing = [run for run in runs if run.events[-2].action is not None
               and run.events[-2].action.value == BAD[-1]]
    assert len(failing) == 1


def test_a_fifo_among_span_files_is_refused_not_waited_on(tmp_path):
    write_genai(tmp_path / "spans.jsonl", "conv-1", GOOD)
    os.mkfifo(tmp_path / "stuck.jsonl")
    refused = subprocess.run([sys.executable, "-m", "trustlayer.cli", "import", "otel",
                              str(tmp_path), "-o", str(tmp_path / "runs")],
                             capture_output=True, text=True, timeout=60, check=False)
    assert refused.returncode == 2 and "stuck.jsonl" in refused.stderr
    assert "FIFO" in refused.stderr and refused.stderr.count("\n") == 1
