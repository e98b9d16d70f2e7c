"""Agent telemetry written by the real OpenTelemetry SDK, in both conventions, as an agent
instrumented with them would emit it: a config-fixing agent reads a file, writes it, runs
the tests and reports (the step results given), with a screenshot in its last prompt."""
from __future__ import annotations

import base64
import io
import json
from pathlib import Path

from openinference.semconv.trace import (
    ImageAttributes,
    MessageAttributes,
    MessageContentAttributes,
    OpenInferenceSpanKindValues,
    SpanAttributes,
)
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.semconv._incubating.attributes import gen_ai_attributes as genai
from PIL import Image

from trustlayer.otel.file_exporter import OtlpJsonFileExporter

GOOD = (("read_file", {"path": "config.ini"}, "debug = true\nport = 8080"),
        ("write_file", {"path": "config.ini", "content": "debug = false"}, "wrote config.ini"),
        ("run_tests", {"command": "pytest -q"}, "3 passed"),
        "Set debug to false in config.ini; the 3 tests pass.")
BAD = (("read_file", {"path": "config.ini"}, "debug = true\nport = 8080"),
       ("write_file", {"path": "config.ini", "content": "debug = false"},
        "permission denied: config.ini"),
       ("run_tests", {"command": "pytest -q"}, "1 failed, 2 passed"),
       "I could not change config.ini.")


def screenshot() -> str:
    buffer = io.BytesIO()
    Image.new("RGB", (40, 30), (20, 120, 200)).save(buffer, "PNG")
    return base64.b64encode(buffer.getvalue()).decode()


def span_writer(path: Path, resource: dict | None = None):
    """A tracer whose spans are appended to `path` as OTLP/JSON, and its provider;
    `resource` adds to the service's attributes (``service.version``)."""
    provider = TracerProvider(resource=Resource.create({"service.name": "config-agent",
                                                        **(resource or {})}))
    provider.add_span_processor(SimpleSpanProcessor(OtlpJsonFileExporter(path)))
    return provider, provider.get_tracer("config-agent")


def write_genai(path: Path, conversation: str, steps: tuple, extra: dict | None = None) -> None:
    """One run in the GenAI semantic conventions appended to `path`."""
    provider, tracer = span_writer(path)
    *tools, answer = steps
    with tracer.start_as_current_span("invoke_agent config-fixer", attributes={
            genai.GEN_AI_OPERATION_NAME: "invoke_agent", genai.GEN_AI_AGENT_NAME: "config-fixer",
            genai.GEN_AI_CONVERSATION_ID: conversation, **(extra or {})}):
        for number, (tool, arguments, result) in enumerate(tools):
            with tracer.start_as_current_span(f"execute_tool {tool}", attributes={
                    genai.GEN_AI_OPERATION_NAME: "execute_tool", genai.GEN_AI_TOOL_NAME: tool,
                    genai.GEN_AI_TOOL_CALL_ID: f"call-{number}",
                    genai.GEN_AI_TOOL_CALL_ARGUMENTS: json.dumps(arguments),
                    genai.GEN_AI_TOOL_CALL_RESULT: result}):
                pass
        prompt = [{"role": "user", "parts": [
            {"type": "text", "content": "Here is the screen."},
            {"type": "blob", "modality": "image", "mime_type": "image/png",
             "content": screenshot()}]}]
        said = [{"role": "assistant", "parts": [{"type": "text", "content": answer}],
                 "finish_reason": "stop"}]
        with tracer.start_as_current_span("chat gpt-4o", attributes={
                genai.GEN_AI_OPERATION_NAME: "chat", genai.GEN_AI_REQUEST_MODEL: "gpt-4o",
                genai.GEN_AI_INPUT_MESSAGES: json.dumps(prompt),
                genai.GEN_AI_OUTPUT_MESSAGES: json.dumps(said)}):
            pass
    provider.shutdown()


def write_openinference(path: Path, session: str, steps: tuple) -> None:
    """One run as OpenInference spans (Arize Phoenix's convention) appended to `path`."""
    provider, tracer = span_writer(path)
    kind = SpanAttributes.OPENINFERENCE_SPAN_KIND
    *tools, answer = steps
    with tracer.start_as_current_span("config-fixer", attributes={
            kind: OpenInferenceSpanKindValues.AGENT.value, SpanAttributes.SESSION_ID: session,
            SpanAttributes.AGENT_NAME: "config-fixer"}):
        for tool, arguments, result in tools:
            with tracer.start_as_current_span(tool, attributes={
                    kind: OpenInferenceSpanKindValues.TOOL.value, SpanAttributes.TOOL_NAME: tool,
                    SpanAttributes.INPUT_VALUE: json.dumps(arguments),
                    SpanAttributes.OUTPUT_VALUE: result}):
                pass
        image = (f"{SpanAttributes.LLM_INPUT_MESSAGES}.0.{MessageAttributes.MESSAGE_CONTENTS}.0."
                 f"{MessageContentAttributes.MESSAGE_CONTENT_IMAGE}.{ImageAttributes.IMAGE_URL}")
        with tracer.start_as_current_span("ChatCompletion", attributes={
                kind: OpenInferenceSpanKindValues.LLM.value,
                f"{SpanAttributes.LLM_INPUT_MESSAGES}.0.{MessageAttributes.MESSAGE_ROLE}": "user",
                image: "data:image/png;base64," + screenshot(),
                f"{SpanAttributes.LLM_OUTPUT_MESSAGES}.0.{MessageAttributes.MESSAGE_ROLE}":
                    "assistant",
                f"{SpanAttributes.LLM_OUTPUT_MESSAGES}.0.{MessageAttributes.MESSAGE_CONTENT}":
                    answer, SpanAttributes.LLM_MODEL_NAME: "gpt-4o"}):
            pass
    provider.shutdown()


WRITERS = {"genai": write_genai, "openinference": write_openinference}
