"""A run as a runner records it: ``with Run(task, sink) as run: run.state(...)``,
``run.action(...)``, ``run.end(outcome)``; :class:`AsyncRun` is the same for asyncio
runners and sinks. Leaving the block without ``end`` ends the run with outcome
``unknown`` (and, after an exception, the error in ``meta``), so no run stays open."""
from __future__ import annotations

import inspect
import uuid
from typing import TYPE_CHECKING, Any

from trustlayer.observe.trace_context import TRACEPARENT, new_traceparent
from trustlayer.runner.events import EventBuilder, Screenshot
from trustlayer.runner.sinks import Sink
from trustlayer.settings import Settings

if TYPE_CHECKING:
    from typing_extensions import Self


def current_traceparent() -> str:
    """The ``traceparent`` of the OpenTelemetry span active here (the agent's own trace),
    or a new one when there is none (or no OpenTelemetry)."""
    try:
        from opentelemetry import trace
    except ImportError:
        return new_traceparent()
    context = trace.get_current_span().get_span_context()
    if not context.is_valid:
        return new_traceparent()
    return f"00-{context.trace_id:032x}-{context.span_id:016x}-{int(context.trace_flags):02x}"


def new_run_id(task: str) -> str:
    """A fresh run id of `task`: the task and 12 random hex digits."""
    return f"{task}-{uuid.uuid4().hex[:12]}"


class _Recording:
    """What both flavours share: the event builder and the end written on leaving."""

    def __init__(self, task: str, sink: Sink, run_id: str | None = None, *,
                 meta: dict[str, Any] | None = None, agent_version: str | None = None,
                 fingerprint: bool = False, settings: Settings | None = None):
        self.sink = sink
        # on every event (a consumer may see any one first): the release, and the trace the
        # run belongs to, so its verdict links to it (W3C trace context)
        meta = {TRACEPARENT: current_traceparent(), **(meta or {})}
        if agent_version is not None:
            meta["agent_version"] = str(agent_version)
        self.events = EventBuilder(run_id or new_run_id(task), task, meta=meta,
                                   fingerprint=fingerprint, settings=settings)

    @property
    def run_id(self) -> str:
        return self.events.run_id

    def _closing_end(self, exc: BaseException | None) -> dict[str, Any] | None:
        if self.events.ended:
            return None
        meta = None if exc is None else {"runner_error": f"{type(exc).__name__}: {exc}"[:500]}
        return self.events.end("unknown", meta=meta)


class Run(_Recording):
    """One run written to a synchronous sink as it happens.

    >>> import tempfile
    >>> from trustlayer.runner.sinks import TraceDir
    >>> with Run("greet", TraceDir(tempfile.mkdtemp()), "greet-1") as run:
    ...     run.state(text="Hello")
    ...     run.action("click", "Wave")
    ...     run.end("success")
    >>> run.events.seq
    3
    """

    def state(self, *, screenshot: Screenshot | None = None, text: str | None = None,
              a11y: Any = None, url: str | None = None, title: str | None = None,
              files: dict[str, str] | None = None, network: list[dict] | None = None,
              label: str | None = None, ts: float | None = None,
              meta: dict[str, Any] | None = None) -> None:
        """Record what the runner observed (see :meth:`EventBuilder.state`)."""
        self.sink.write(self.events.state(screenshot=screenshot, text=text, a11y=a11y, url=url,
                                          title=title, files=files, network=network,
                                          label=label, ts=ts, meta=meta))

    def action(self, type: str, target: str | None = None, value: str | None = None,
               args: dict[str, Any] | None = None, *, read_only: bool | None = None,
               ts: float | None = None, meta: dict[str, Any] | None = None) -> None:
        """Record what the agent did; `read_only` (tool and api calls) whether the tool
        only reads, as it declares it (written only when given)."""
        self.sink.write(self.events.action(type, target, value, args, read_only=read_only,
                                           ts=ts, meta=meta))

    def message(self, text: str, to: str = "user", *, ts: float | None = None,
                meta: dict[str, Any] | None = None) -> None:
        """Record what the agent said to the person `to`."""
        self.sink.write(self.events.message(text, to, ts=ts, meta=meta))

    def end(self, outcome: str = "unknown", self_report: str | None = None, *,
            ts: float | None = None, meta: dict[str, Any] | None = None) -> None:
        """Record the end of the run."""
        self.sink.write(self.events.end(outcome, self_report, ts=ts, meta=meta))

    def __enter__(self) -> Self:
        return self

    def __exit__(self, exc_type: object, exc: BaseException | None, tb: object) -> None:
        if (event := self._closing_end(exc)) is not None:
            self.sink.write(event)


class AsyncRun(_Recording):
    """:class:`Run` for asyncio: ``async with AsyncRun(task, sink) as run: await
    run.state(...)``; the sink's ``write`` may be a coroutine function or a plain one."""

    async def _write(self, event: dict[str, Any]) -> None:
        written = self.sink.write(event)
        if inspect.isawaitable(written):
            await written

    async def state(self, **observation: Any) -> None:
        """Record what the runner observed (the keywords of :meth:`Run.state`)."""
        await self._write(self.events.state(**observation))

    async def action(self, type: str, target: str | None = None, value: str | None = None,
                     args: dict[str, Any] | None = None, *, read_only: bool | None = None,
                     ts: float | None = None, meta: dict[str, Any] | None = None) -> None:
        """Record what the agent did (see :meth:`Run.action`)."""
        await self._write(self.events.action(type, target, value, args, read_only=read_only,
                                             ts=ts, meta=meta))

    async def message(self, text: str, to: str = "user", *, ts: float | None = None,
                      meta: dict[str, Any] | None = None) -> None:
        """Record what the agent said to the person `to`."""
        await self._write(self.events.message(text, to, ts=ts, meta=meta))

    async def end(self, outcome: str = "unknown", self_report: str | None = None, *,
                  ts: float | None = None, meta: dict[str, Any] | None = None) -> None:
        """Record the end of the run."""
        await self._write(self.events.end(outcome, self_report, ts=ts, meta=meta))

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, exc_type: object, exc: BaseException | None, tb: object) -> None:
        if (event := self._closing_end(exc)) is not None:
            await self._write(event)
