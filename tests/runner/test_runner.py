"""The runner library: runs recorded through Run/AsyncRun read back as the judge reads
them; bad events are refused at the runner with the field named; an abandoned block still
ends its run; screenshots are written beside the trace or sent as fingerprints."""
from __future__ import annotations

import asyncio
import hashlib
import io
import json
from pathlib import Path

import pytest
from PIL import Image

from trustlayer.errors import TraceError
from trustlayer.observe.traces import read_run, read_runs
from trustlayer.runner import AsyncRun, Run, TraceDir


def png(shade: int) -> bytes:
    buffer = io.BytesIO()
    Image.new("L", (32, 24), shade).save(buffer, "PNG")
    return buffer.getvalue()


def lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_a_recorded_run_reads_back_with_its_screenshot_beside_it(tmp_path):
    with TraceDir(tmp_path) as sink, Run("greet", sink, "greet-1", meta={"agent": "a1"}) as run:
        run.state(screenshot=png(10), text="Hello", url="http://x/", title="Home",
                  network=[{"method": "GET", "path": "/", "status": 200, "type": "document"}])
        run.action("click", "Wave", args={"times": 2})
        run.state(text="Waved", files={"a.txt": "0" * 64})
        run.end("success", "success")
    [read] = read_runs([tmp_path])
    assert [e.kind for e in read.events] == ["state", "action", "state", "end"]
    assert [e.seq for e in read.events] == [0, 1, 2, 3]
    first = read.events[0]
    assert first.observation.screenshot.data == png(10)
    assert first.observation.network[0].status == 200
    assert first.raw["observation"]["screenshot"] == "shots/greet-1/0.png"
    assert read.events[1].action.args == {"times": 2}
    assert read.outcome == "success" and read.end.self_report == "success"
    assert all({k: v for k, v in e.meta.items() if k != "traceparent"} == {"agent": "a1"}
               for e in read.events)
    assert all(e.ts > 1.7e9 for e in read.events)


@pytest.mark.parametrize("call, field", [
    (lambda run: run.state(text="x", title=7), "field 'title' must be a string"),
    (lambda run: run.state(url="http://x/"), "at least one of screenshot, text, a11y, files"),
    (lambda run: run.action("fly", "away"), "action.type 'fly' is not one of"),
    (lambda run: run.end("done"), "outcome 'done' is not one of"),
    (lambda run: run.state(text="x", network=[{"method": "GET", "path": "/", "status": "ok",
                                                "type": "xhr"}]),
     "observation.network[0].status must be an HTTP status"),
    (lambda run: run.state(screenshot=b"GIF89a not a screenshot"), "not a PNG, JPEG or WebP"),
])
def test_a_bad_event_is_refused_at_the_runner_with_the_field_named(tmp_path, call, field):
    sink = TraceDir(tmp_path)
    with Run("t", sink, "r") as run:
        run.state(text="start")
        with pytest.raises(TraceError) as refused:
            call(run)
        assert str(refused.value).startswith("run r event 1: ")
        assert field in str(refused.value)
        run.end()
    assert [e["seq"] for e in lines(tmp_path / "r.jsonl")] == [0, 1]  # nothing half-written


def test_nothing_goes_after_the_end(tmp_path):
    with Run("t", TraceDir(tmp_path), "r") as run:
        run.state(text="a")
        run.end("failure")
        with pytest.raises(TraceError, match="event after the run's 'end' event"):
            run.state(text="b")
    assert read_run(tmp_path / "r.jsonl").outcome == "failure"


def test_a_runner_that_crashes_still_ends_its_run_with_the_error(tmp_path):
    with pytest.raises(RuntimeError), Run("t", TraceDir(tmp_path), "r") as run:
        run.state(text="a")
        raise RuntimeError("browser died")
    end = read_run(tmp_path / "r.jsonl").end
    assert end.outcome == "unknown"
    assert end.meta["runner_error"] == "RuntimeError: browser died"


def test_fingerprinting_at_the_runner_sends_no_image(tmp_path):
    shot = tmp_path / "frame.png"
    shot.write_bytes(png(200))
    out = tmp_path / "runs"
    with Run("t", TraceDir(out), "r", fingerprint=True) as run:
        run.state(screenshot=shot)
    [state, end] = lines(out / "r.jsonl")
    assert "screenshot" not in state["observation"] and not (out / "shots").exists()
    printed = read_run(out / "r.jsonl").events[0].observation.screenshot_print
    assert printed.sha256 == hashlib.sha256(png(200)).hexdigest()
    assert end["outcome"] == "unknown"


def test_a_missing_screenshot_file_is_named(tmp_path):
    with Run("t", TraceDir(tmp_path), "r") as run, \
            pytest.raises(TraceError, match="screenshot .*nope.png: No such file"):
        run.state(screenshot=tmp_path / "nope.png")


class AsyncListSink:
    def __init__(self) -> None:
        self.events: list[dict] = []

    async def write(self, event: dict) -> None:
        await asyncio.sleep(0)
        self.events.append(event)

    async def close(self) -> None:
        pass


def test_async_runs_write_to_async_and_plain_sinks(tmp_path):
    async def record(sink) -> None:
        async with AsyncRun("t", sink, "r") as run:
            await run.state(text="a", screenshot=png(5))
            await run.action("key", value="Enter")
            await run.end("success")

    async_sink = AsyncListSink()
    asyncio.run(record(async_sink))
    asyncio.run(record(TraceDir(tmp_path)))
    assert [e["kind"] for e in async_sink.events] == ["state", "action", "end"]
    assert async_sink.events[0]["observation"]["screenshot"].startswith("data:image/png;")
    assert [e.kind for e in read_run(tmp_path / "r.jsonl").events] == ["state", "action", "end"]


def test_a_run_id_that_is_no_file_name_is_refused(tmp_path):
    with pytest.raises(ValueError, match="cannot name a trace file"), \
            Run("t", TraceDir(tmp_path), "../escape") as run:
        run.end()


def test_a_run_names_the_trace_its_agent_ran_in(tmp_path):
    """Every event carries the W3C traceparent of the OpenTelemetry span active when the
    run began (a new one without a span), so its verdict links to that trace."""
    from opentelemetry.sdk.trace import TracerProvider

    from trustlayer.observe.trace_context import parse_traceparent, run_trace

    tracer = TracerProvider().get_tracer("agent")
    with tracer.start_as_current_span("invoke_agent") as span:
        with Run("t", TraceDir(tmp_path), "traced") as run:
            run.state(text="x")
            run.end("success")
    context = span.get_span_context()
    traced = read_run(tmp_path / "traced.jsonl")
    assert run_trace(traced) == (f"{context.trace_id:032x}", f"{context.span_id:016x}")
    assert len({e.meta["traceparent"] for e in traced.events}) == 1
    with Run("t", TraceDir(tmp_path), "untraced") as run:
        run.end("success")
    assert parse_traceparent(read_run(tmp_path / "untraced.jsonl").end.meta["traceparent"])
