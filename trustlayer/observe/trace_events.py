"""The events of an agent's trace, typed (format version 1, see docs/TRACE_FORMAT.md):
what the runner observed, what the agent did, how the run ended, and a run of them.
:mod:`trustlayer.observe.event_parsing` makes them from JSON, :mod:`trustlayer.observe.traces`
from trace files."""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, TypeVar

from trustlayer.observe.canonical import mask
from trustlayer.observe.images import ImageRef, ScreenshotPrint
from trustlayer.observe.network import Response

FORMAT_VERSION = 1
EVENT_KINDS = ("state", "action", "end")
ACTION_TYPES = ("click", "key", "type", "scroll", "wait", "navigate", "tool", "api", "message")
OUTCOMES = ("success", "failure", "unknown")
SELF_REPORTS = ("success", "failure")
LABEL_CAUSES = ("product_bug", "agent_error", None)

Frozen = TypeVar("Frozen")


def as_given(cls: type[Frozen], **fields: Any) -> Frozen:
    """An instance of the frozen dataclass `cls` holding `fields`, every field given: what
    its ``__init__`` makes of them, without setting each through ``object.__setattr__``,
    a frozen class's costly way (every event of a run makes one or two, every state a
    fingerprint and a step). Nothing is checked or computed: ``__post_init__`` does not
    run."""
    made = object.__new__(cls)
    made.__dict__.update(fields)
    return made


@dataclass(frozen=True)
class Action:
    """What the agent did."""

    type: str
    target: str | None = None
    value: str | None = None
    args: dict[str, Any] | None = None
    #: whether a tool or api call only reads, as the tool declares it; None: unknown
    read_only: bool | None = None

    @property
    def call(self) -> str:
        """The name of the call across runs: its type and target (``tool:run_tests``)."""
        return f"{self.type}:{self.target or ''}"

    def signature(self) -> str:
        """A short canonical form of the action, used to compare actions across runs:
        type, target and value (for tools: the path or command word), volatile parts
        masked."""
        if self.type in ("tool", "api"):
            subject = (self.args or {}).get("path") or (self.value or "").split(" ", 1)[0]
        else:
            subject = self.value or ""
        return mask(f"{self.type}:{self.target or ''}:{subject}")


@dataclass(frozen=True)
class Observation:
    """What the runner observed in one state."""

    screenshot: ImageRef | None = None
    screenshot_print: ScreenshotPrint | None = None
    text: str | None = None
    a11y: Any = None
    url: str | None = None
    title: str | None = None
    files: dict[str, str] | None = None
    label: str | None = None
    network: tuple[Response, ...] = ()
    extra: dict[str, Any] = field(default_factory=dict)

    def shown_text(self) -> str:
        """What the state shows as one string, white space folded: its title, text and
        accessibility tree (where typed text is looked for, verbatim)."""
        return " ".join(" ".join(self.shown_parts()).split())

    def shown_parts(self) -> list[str]:
        """Its title, text and accessibility tree, as they came."""
        return [self.title or "", self.text or "",
                self.a11y if isinstance(self.a11y, str) else
                json.dumps(self.a11y, ensure_ascii=False) if self.a11y else ""]


@dataclass(frozen=True)
class Event:
    """One validated trace event."""

    run_id: str
    task: str
    seq: int
    ts: float
    kind: str
    observation: Observation | None = None
    action: Action | None = None
    outcome: str | None = None
    self_report: str | None = None
    meta: dict[str, Any] | None = None
    raw: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)


@dataclass
class Run:
    """All events of one run, in `seq` order."""

    run_id: str
    task: str
    events: list[Event]
    source: str = "<memory>"

    @property
    def states(self) -> list[Event]:
        return [e for e in self.events if e.kind == "state"]

    @property
    def end(self) -> Event | None:
        return self.events[-1] if self.events and self.events[-1].kind == "end" else None

    @property
    def outcome(self) -> str | None:
        return self.end.outcome if self.end else None
