"""Telemetry spans into runs of the trace format: one run per conversation
(``gen_ai.conversation.id``, OpenInference ``session.id``) or else per trace; a tool call
is an ``action`` (type ``tool``) followed by a ``state`` holding its result, an agent
message a ``state`` with its text and any image as the screenshot. Span ids and the
attributes no step used travel in each event's ``meta.otel``."""
from __future__ import annotations

import base64
import binascii
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from trustlayer.errors import TraceError
from trustlayer.observe.traces import OUTCOMES
from trustlayer.otel.conventions import Step, run_key, step_of
from trustlayer.otel.otlp import Span, otlp_files, read_spans
from trustlayer.runner.conversions import file_safe, tool_call
from trustlayer.runner.events import EventBuilder

OUTCOME_ATTRIBUTE = "trustlayer.outcome"  # a runner may record the ground truth on the agent span


def group_runs(spans: Iterable[Span]) -> dict[str, list[Span]]:
    """Spans by run: a trace's conversation (the first of its spans that names one),
    else the trace id; conversations spread over traces are one run."""
    traces: dict[str, list[Span]] = {}
    for span in spans:
        traces.setdefault(span.trace_id, []).append(span)
    runs: dict[str, list[Span]] = {}
    for trace_id, members in traces.items():
        key = next((k for k in map(run_key, members) if k), trace_id)
        runs.setdefault(key, []).extend(members)
    return runs


def _image(uri: str, span: Span) -> bytes:
    try:
        return base64.b64decode(uri.partition(",")[2], validate=True)
    except (binascii.Error, ValueError):
        raise TraceError(f"span '{span.name}': image is not valid base64", span.source,
                         span.line) from None


def _meta(step: Step) -> dict[str, Any]:
    otel: dict[str, Any] = {"trace_id": step.span.trace_id, "span_id": step.span.span_id,
                            "span": step.span.name}
    if step.unused:
        otel["attributes"] = step.unused
    return {"otel": otel}


def _events(run_id: str, steps: list[Step], task: str | None, outcome: str) -> list[dict]:
    agent = next((s for s in steps if s.kind == "agent"), None)
    work = [s for s in steps if s.kind != "agent"]
    first = (agent or steps[0]).span
    if not any(s.kind == "tool" or s.text or s.image for s in work):
        raise TraceError(f"trace {first.trace_id}: no tool calls or agent messages "
                         "(execute_tool/chat or TOOL/LLM spans) to make a run of",
                         first.source, first.line)
    name = task or (agent.agent if agent else None) or "otel"
    events = EventBuilder(run_id, str(name))
    out = []
    for step in work:
        try:
            if step.kind == "tool":
                value, args = tool_call(step.arguments)
                out.append(events.action("tool", step.tool, value, args, ts=step.span.start,
                                         meta=_meta(step)))
                if step.result is not None:
                    out.append(events.state(text=step.result, ts=step.span.end))
            elif step.text or step.image:
                out.append(events.state(text=step.text, ts=step.span.end, meta=_meta(step),
                                        screenshot=_image(step.image, step.span)
                                        if step.image else None))
        except TraceError as exc:  # said at the span it came from
            raise TraceError(f"span '{step.span.name}': {exc.message}", step.span.source,
                             step.span.line) from None
    truth = agent.unused.pop(OUTCOME_ATTRIBUTE, outcome) if agent else outcome
    if truth not in OUTCOMES:
        raise TraceError(f"{OUTCOME_ATTRIBUTE} '{truth}' is not one of {', '.join(OUTCOMES)}",
                         first.source, first.line)
    end_ts = max(s.span.end for s in steps)
    out.append(events.end(str(truth), ts=end_ts, meta=_meta(agent) if agent else None))
    return out


def convert(paths: Iterable[str | Path], task: str | None = None,
            outcome: str = "unknown") -> dict[str, list[dict]]:
    """The runs in the OTLP/JSON files (or folders of them) `paths`, as validated events
    by run id. `task` names the task (default: the agent's name); `outcome` is the ground
    truth of runs whose agent span does not carry ``trustlayer.outcome``."""
    paths = list(paths)
    spans = [span for path in otlp_files(paths) for span in read_spans(path)]
    if not spans:
        raise TraceError("no spans in the OTLP files given", ", ".join(map(str, paths)))
    runs = {}
    for key, members in group_runs(spans).items():
        steps = [s for s in map(step_of, sorted(members, key=lambda s: (s.start, s.end)))
                 if s is not None]
        if not steps:
            span = members[0]
            raise TraceError(f"trace {span.trace_id}: no span of the GenAI or OpenInference "
                             "conventions (gen_ai.operation.name, openinference.span.kind)",
                             span.source, span.line)
        run_id = file_safe(key)
        runs[run_id] = _events(run_id, steps, task, outcome)
    return runs
