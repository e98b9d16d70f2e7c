"""Telemetry spans into runs of the trace format: one run per conversation
(``gen_ai.conversation.id``, OpenInference ``session.id``) or else per trace; a tool call
is an ``action`` (type ``tool``, with its read-only hint) followed by a ``state`` holding
its result and any error it failed with; a model call is a ``state`` with the user's new
message (and any image as the screenshot) and a ``message`` action with what the assistant
said. Span ids and the attributes no step used travel in each event's ``meta.otel``; the
agent's release (``gen_ai.agent.version``, else ``service.version``) in
``meta.agent_version`` of every event."""
from __future__ import annotations

import binascii
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from trustlayer.errors import TraceError
from trustlayer.observe.trace_events import OUTCOMES
from trustlayer.otel.conventions import SERVICE_VERSION, Step, run_key, step_of
from trustlayer.otel.otlp import Span, otlp_files, read_spans
from trustlayer.runner.conversions import run_ids, tool_call
from trustlayer.runner.events import EventBuilder
from trustlayer.strict_base64 import strict_b64decode

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
        return strict_b64decode(uri.partition(",")[2])
    except (binascii.Error, ValueError):
        raise TraceError(f"span '{span.name}': image is not valid base64", span.source,
                         span.line) from None


def _meta(step: Step) -> dict[str, Any]:
    otel: dict[str, Any] = {"trace_id": step.span.trace_id, "span_id": step.span.span_id,
                            "span": step.span.name}
    if step.unused:
        otel["attributes"] = step.unused
    return {"otel": otel}


def _step_events(events: EventBuilder, step: Step) -> list[dict[str, Any]]:
    """The events of one tool or model call (none for a call that holds nothing)."""
    span, meta = step.span, _meta(step)
    if step.kind == "tool":
        value, args = tool_call(step.arguments)
        out = [events.action("tool", step.tool, value, args, read_only=step.read_only,
                             ts=span.start, meta=meta)]
        # a failed call's error belongs to what the agent saw next (a 5xx, an SMTP 421)
        seen = "\n".join(text for text in (step.result, step.error) if text is not None)
        if step.result is not None or step.error:
            out.append(events.state(text=seen, ts=span.end))
        return out
    out = []
    if step.heard or step.image:
        out.append(events.state(text=step.heard, ts=span.start, meta=meta,
                                screenshot=_image(step.image, span) if step.image else None))
    if step.said:
        out.append(events.message(step.said, ts=span.end, meta=meta))
    return out


def _version(steps: list[Step]) -> dict[str, str] | None:
    """``meta.agent_version`` of a run: the agent span's, else its service's."""
    version = next((s.version for s in steps if s.version), None) or next(
        (str(s.span.resource[SERVICE_VERSION]) for s in steps
         if SERVICE_VERSION in s.span.resource), None)
    return {"agent_version": version} if version else None


def _events(run_id: str, steps: list[Step], task: str | None, outcome: str) -> list[dict]:
    agent = next((s for s in steps if s.kind == "agent"), None)
    work = [s for s in steps if s.kind != "agent"]
    first = (agent or steps[0]).span
    if not any(s.kind == "tool" or s.heard or s.said or s.image for s in work):
        raise TraceError(f"trace {first.trace_id}: no tool calls or agent messages "
                         "(execute_tool/chat or TOOL/LLM spans) to make a run of",
                         first.source, first.line)
    name = task or (agent.agent if agent else None) or "otel"
    events = EventBuilder(run_id, str(name), meta=_version(steps))
    out = []
    for step in work:
        try:
            out += _step_events(events, step)
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
    grouped = group_runs(spans)
    ids = run_ids(grouped)  # keys alike once file-safe stay apart
    for key, members in grouped.items():
        steps = [s for s in map(step_of, sorted(members, key=lambda s: (s.start, s.end)))
                 if s is not None]
        if not steps:
            span = members[0]
            raise TraceError(f"trace {span.trace_id}: no span of the GenAI or OpenInference "
                             "conventions (gen_ai.operation.name, openinference.span.kind)",
                             span.source, span.line)
        run_id = ids[key]
        runs[run_id] = _events(run_id, steps, task, outcome)
    return runs
