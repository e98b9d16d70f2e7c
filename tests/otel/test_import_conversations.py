"""`trustlayer import otel` keeps what decides a conversational agent's verdict (spans
written by the real OpenTelemetry SDK): the user's messages as states, the assistant's as
`message` actions, chat spans that only call tools, a tool's read-only hint, a failed tool
call's error in the state after it, and the agent's release in `meta.agent_version`; in the
current GenAI form, its older flattened and event forms, and OpenInference."""
from __future__ import annotations

import contextlib
import json
import smtplib

import pytest
from openinference.semconv.trace import OpenInferenceSpanKindValues, SpanAttributes
from opentelemetry.semconv._incubating.attributes import gen_ai_attributes as genai
from opentelemetry.trace import Status, StatusCode
from otel_spans import span_writer

from trustlayer.cli import main
from trustlayer.observe.trace_events import Run
from trustlayer.observe.traces import read_runs

SMTP_DOWN = "421 service not available"


def text(role: str, content: str) -> dict:
    return {"role": role, "parts": [{"type": "text", "content": content}]}


def tool_request(name: str) -> dict:
    return {"role": "assistant", "parts": [{"type": "tool_call", "id": name, "name": name,
                                            "arguments": {}}]}


def chat(tracer, inputs: list[dict], outputs: list[dict]) -> None:
    with tracer.start_as_current_span("chat gpt-4o", attributes={
            genai.GEN_AI_OPERATION_NAME: "chat", genai.GEN_AI_INPUT_MESSAGES: json.dumps(inputs),
            genai.GEN_AI_OUTPUT_MESSAGES: json.dumps(outputs)}):
        pass


def tool(tracer, name: str, arguments: dict, result: str | None, read_only: bool,
         fails: Exception | None = None) -> None:
    attributes = {genai.GEN_AI_OPERATION_NAME: "execute_tool", genai.GEN_AI_TOOL_NAME: name,
                  genai.GEN_AI_TOOL_CALL_ARGUMENTS: json.dumps(arguments),
                  "gen_ai.tool.read_only": read_only}
    if result is not None:
        attributes[genai.GEN_AI_TOOL_CALL_RESULT] = result
    with pytest.raises(type(fails)) if fails else contextlib.nullcontext(), \
            tracer.start_as_current_span(f"execute_tool {name}", attributes=attributes):
        if fails:  # the SDK records the exception and sets the status ERROR
            raise fails


def write_support_run(path, agent_attributes: dict, resource: dict | None = None) -> None:
    """A customer asks to mail an invoice; the agent looks it up (a read), the mail server
    refuses the send; the agent says so; the customer thanks it."""
    provider, tracer = span_writer(path, resource)
    system, ask = text("system", "You are a billing agent."), text("user", "Mail invoice 42")
    history = [system, ask, tool_request("get_invoice"), text("tool", "invoice 42: $10")]
    failed = [*history, tool_request("send_email"), text("tool", "error")]
    sorry = text("assistant", "The mail server failed; please try later.")
    with tracer.start_as_current_span("invoke_agent billing", attributes={
            genai.GEN_AI_OPERATION_NAME: "invoke_agent", genai.GEN_AI_AGENT_NAME: "billing",
            genai.GEN_AI_CONVERSATION_ID: "conv-1", **agent_attributes}):
        chat(tracer, [system, ask], [tool_request("get_invoice")])  # only calls a tool
        tool(tracer, "get_invoice", {"id": "42"}, "invoice 42: $10", read_only=True)
        chat(tracer, history, [tool_request("send_email")])
        tool(tracer, "send_email", {"to": "a@example.com"}, None, read_only=False,
             fails=smtplib.SMTPServerDisconnected(SMTP_DOWN))
        chat(tracer, failed, [sorry])
        chat(tracer, [*failed, sorry, text("user", "Thanks")], [text("assistant", "Welcome")])
    provider.shutdown()


def imported(tmp_path, *args: str) -> Run:
    assert main(["-q", "import", "otel", str(tmp_path / "spans.jsonl"), "-o",
                 str(tmp_path / "runs"), *args]) == 0
    [run] = read_runs([tmp_path / "runs"])
    return run


def shape(run: Run) -> list[tuple]:
    return [(e.kind, e.action.type, e.action.target, e.action.read_only) if e.action
            else (e.kind, e.observation.text) if e.observation else (e.kind,)
            for e in run.events]


def test_a_conversation_with_a_failed_tool_call_keeps_what_decides(tmp_path):
    write_support_run(tmp_path / "spans.jsonl", {"gen_ai.agent.version": "3.2"},
                      {"service.version": "9.9"})
    run = imported(tmp_path)
    events = shape(run)
    error_state = events[4]
    assert events[:4] == [("state", "Mail invoice 42"),
                          ("action", "tool", "get_invoice", True),
                          ("state", "invoice 42: $10"),
                          ("action", "tool", "send_email", False)]
    assert error_state[0] == "state" and error_state[1].startswith("error: ")
    assert "SMTPServerDisconnected" in error_state[1] and SMTP_DOWN in error_state[1]
    assert events[5:] == [("action", "message", "user", None), ("state", "Thanks"),
                          ("action", "message", "user", None), ("end",)]
    assert run.events[5].action.value == "The mail server failed; please try later."
    assert {e.meta["agent_version"] for e in run.events} == {"3.2"}  # the agent's own first


def test_the_service_version_is_the_release_when_the_agent_names_none(tmp_path):
    write_support_run(tmp_path / "spans.jsonl", {}, {"service.version": "2.0.1"})
    assert {e.meta["agent_version"] for e in imported(tmp_path).events} == {"2.0.1"}


def test_a_failed_span_without_exception_gives_its_status(tmp_path):
    provider, tracer = span_writer(tmp_path / "spans.jsonl")
    with tracer.start_as_current_span("execute_tool charge", attributes={
            genai.GEN_AI_OPERATION_NAME: "execute_tool", genai.GEN_AI_TOOL_NAME: "charge",
            genai.GEN_AI_TOOL_CALL_RESULT: "declined?"}) as span:
        span.set_status(Status(StatusCode.ERROR, "payment gateway 503"))
    provider.shutdown()
    run = imported(tmp_path)
    assert run.events[1].observation.text == "declined?\nerror: payment gateway 503"
    assert "read_only" not in run.events[0].raw["action"]  # no hint: unknown


def test_the_older_flattened_and_event_forms_are_read(tmp_path):
    provider, tracer = span_writer(tmp_path / "spans.jsonl")
    with tracer.start_as_current_span("session"):
        with tracer.start_as_current_span("chat old", attributes={
                genai.GEN_AI_OPERATION_NAME: "chat", "gen_ai.prompt.0.role": "system",
                "gen_ai.prompt.0.content": "Be brief.", "gen_ai.prompt.1.role": "user",
                "gen_ai.prompt.1.content": "Hello", "gen_ai.completion.0.role": "assistant",
                "gen_ai.completion.0.content": "Hi there"}):
            pass
        with tracer.start_as_current_span("chat events", attributes={
                genai.GEN_AI_OPERATION_NAME: "chat"}) as span:
            span.add_event("gen_ai.user.message", {"content": "Where is my parcel?"})
            span.add_event("gen_ai.choice", {"index": 0, "message": json.dumps(
                {"role": "assistant", "content": "On its way."})})
        with tracer.start_as_current_span("chat content events", attributes={
                genai.GEN_AI_OPERATION_NAME: "chat"}) as span:
            span.add_event("gen_ai.content.prompt", {"gen_ai.prompt": json.dumps(
                [{"role": "user", "content": "Where is my parcel?"},
                 {"role": "assistant", "content": "On its way."},
                 {"role": "user", "content": "When?"}])})
            span.add_event("gen_ai.content.completion", {"gen_ai.completion": json.dumps(
                [{"role": "assistant", "content": "Tomorrow."}])})
    provider.shutdown()
    run = imported(tmp_path, "--task", "old")
    assert shape(run) == [("state", "Hello"), ("action", "message", "user", None),
                          ("state", "Where is my parcel?"),
                          ("action", "message", "user", None), ("state", "When?"),
                          ("action", "message", "user", None), ("end",)]
    assert [e.action.value for e in run.events if e.action] == ["Hi there", "On its way.",
                                                                "Tomorrow."]


def test_openinference_conversations_and_tool_hints(tmp_path):
    provider, tracer = span_writer(tmp_path / "spans.jsonl")
    kind = SpanAttributes.OPENINFERENCE_SPAN_KIND
    with tracer.start_as_current_span("session"):
        with tracer.start_as_current_span("ChatCompletion", attributes={
                kind: OpenInferenceSpanKindValues.LLM.value,
                "llm.input_messages.0.message.role": "user",
                "llm.input_messages.0.message.content": "Refund order 7",
                "llm.output_messages.0.message.role": "assistant",
                "llm.output_messages.0.message.content": "Refunding it."}):
            pass
        with tracer.start_as_current_span("refund", attributes={
                kind: OpenInferenceSpanKindValues.TOOL.value, SpanAttributes.TOOL_NAME: "refund",
                SpanAttributes.INPUT_VALUE: '{"order": "7"}', "tool.read_only": False,
                SpanAttributes.OUTPUT_VALUE: "refunded"}):
            pass
    provider.shutdown()
    run = imported(tmp_path, "--task", "oi")
    assert shape(run) == [
        ("state", "Refund order 7"), ("action", "message", "user", None),
        ("action", "tool", "refund", False), ("state", "refunded"), ("end",)]
    assert [e.ts for e in run.events] == sorted(e.ts for e in run.events)
