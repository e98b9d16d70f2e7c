"""The events of one run, built and checked at the runner: numbered, time-stamped and
validated by the judge's own :func:`~trustlayer.observe.event_parsing.parse_event`, so an event a
runner sends is one the judge reads (a bad one is refused here, with the field named)."""
from __future__ import annotations

import base64
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from trustlayer.errors import TraceError
from trustlayer.observe.event_parsing import parse_event
from trustlayer.observe.runner_prints import fingerprint_screenshots
from trustlayer.observe.trace_events import FORMAT_VERSION
from trustlayer.runner.json_forms import NoJsonForm, json_form
from trustlayer.settings import Settings

# the formats the reader takes; other bytes are labelled png and refused by parse_event
MAGIC = ((b"\x89PNG", "png"), (b"\xff\xd8", "jpeg"), (b"RIFF", "webp"))

Screenshot = bytes | str | Path


def data_uri(image: bytes) -> str:
    """`image` (PNG, JPEG or WebP bytes) as a ``data:`` URI, its type read from its header.

    >>> data_uri(b"\\x89PNG...")[:26]
    'data:image/png;base64,iVBO'
    """
    kind = next((name for magic, name in MAGIC if image.startswith(magic)), "png")
    return f"data:image/{kind};base64," + base64.b64encode(image).decode("ascii")


class EventBuilder:
    """Makes the events of one run: ``seq`` from 0 without gaps, ``ts`` from `clock`, every
    event validated before it is handed out; nothing after the ``end`` event.

    >>> events = EventBuilder("r1", "demo", clock=lambda: 5.0)
    >>> events.state(text="hello")["seq"], events.action("click", "OK")["action"]
    (0, {'type': 'click', 'target': 'OK'})
    >>> events.state(text="hi", title=3)
    Traceback (most recent call last):
    trustlayer.errors.TraceError: run r1 event 2: field 'title' must be a string
    """

    def __init__(self, run_id: str, task: str, *, meta: dict[str, Any] | None = None,
                 fingerprint: bool = False, settings: Settings | None = None,
                 clock: Callable[[], float] = time.time):
        self.run_id, self.task, self.meta = run_id, task, meta
        self.fingerprint, self.settings, self.clock = fingerprint, settings or Settings(), clock
        self.seq, self.ended = 0, False

    def state(self, *, screenshot: Screenshot | None = None, text: str | None = None,
              a11y: Any = None, url: str | None = None, title: str | None = None,
              files: dict[str, str] | None = None, network: list[dict] | None = None,
              label: str | None = None, ts: float | None = None,
              meta: dict[str, Any] | None = None) -> dict[str, Any]:
        """A ``state`` event; `screenshot` is image bytes or a path to an image file;
        `meta` adds to the run's for this event."""
        if isinstance(screenshot, (str, Path)):
            screenshot = self._read_image(Path(screenshot))
        fields = {"screenshot": None if screenshot is None else data_uri(screenshot),
                  "text": text, "a11y": a11y, "url": url, "title": title, "files": files,
                  "network": network, "label": label}
        observation = {name: value for name, value in fields.items() if value is not None}
        return self._event("state", ts, meta, observation=observation)

    def action(self, type: str, target: str | None = None, value: str | None = None,
               args: dict[str, Any] | None = None, *, read_only: bool | None = None,
               ts: float | None = None, meta: dict[str, Any] | None = None
               ) -> dict[str, Any]:
        """An ``action`` event: what the agent did (`type` is one of the format's);
        `read_only` (tool and api calls) is written only when given."""
        fields = {"type": type, "target": target, "value": value, "args": args,
                  "read_only": read_only}
        return self._event("action", ts, meta,
                           action={k: v for k, v in fields.items() if v is not None})

    def message(self, text: str, to: str = "user", *, ts: float | None = None,
                meta: dict[str, Any] | None = None) -> dict[str, Any]:
        """A ``message`` action: the agent said `text` to the person `to`."""
        return self.action("message", to, text, ts=ts, meta=meta)

    def end(self, outcome: str = "unknown", self_report: str | None = None, *,
            ts: float | None = None, meta: dict[str, Any] | None = None) -> dict[str, Any]:
        """The ``end`` event; `outcome` is ground truth where known, `self_report` what the
        agent claimed."""
        fields: dict[str, Any] = {"outcome": outcome}
        if self_report is not None:
            fields["self_report"] = self_report
        return self._event("end", ts, meta, **fields)

    def _where(self) -> tuple[str, None]:
        return f"run {self.run_id} event {self.seq}", None

    def _read_image(self, path: Path) -> bytes:
        try:
            return path.read_bytes()
        except OSError as exc:
            raise TraceError(f"screenshot {path}: {exc.strerror}", *self._where()) from None

    def _event(self, kind: str, ts: float | None, event_meta: dict[str, Any] | None = None,
               **fields: Any) -> dict[str, Any]:
        if self.ended:
            raise TraceError("event after the run's 'end' event", *self._where())
        source, _ = self._where()
        try:  # plain JSON before the seq is used: a refused event leaves no gap
            fields = {name: json_form(value, name) for name, value in fields.items()}
            meta = json_form({**(self.meta or {}), **(event_meta or {})}, "meta")
        except NoJsonForm as exc:
            raise TraceError(str(exc), source) from None
        event: dict[str, Any] = {"v": FORMAT_VERSION, "run_id": self.run_id, "task": self.task,
                                 "seq": self.seq, "ts": self.clock() if ts is None else ts,
                                 "kind": kind, **fields}
        if meta:
            event["meta"] = meta
        if self.fingerprint:
            event = fingerprint_screenshots(event, None, self.settings, source)
        parse_event(event, source=source, settings=self.settings)
        self.seq += 1
        self.ended = kind == "end"
        return event
