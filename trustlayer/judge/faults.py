"""Events the judge cannot use, and the verdict they give: a run is never blamed on its
agent or its product for what its stream did.

An event that reads but cannot be judged (its screenshot's pixels do not decode, or the
matcher fails on it) ends the run: the verdict is final, ``fail`` with cause
:data:`STREAM_FAULT` and a reason naming the event. Judging on without the event would
give a verdict about another run than the one that happened. The batch validator and the
streaming worker both feed events through :func:`feed_checked`, so they agree.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Protocol

from trustlayer.errors import UnjudgeableEvent
from trustlayer.judge.status import Status
from trustlayer.observe.trace_events import Event

log = logging.getLogger(__name__)

#: The cause of a verdict the run's stream, not its agent or product, decided.
STREAM_FAULT = "stream_fault"


@dataclass(frozen=True)
class Fault:
    """Why an event could not be judged: ``bad_image`` (pixels that do not decode) or
    ``internal_error`` (a bug, logged with its traceback), and the verdict's reason."""

    kind: str
    reason: str


class Judging(Protocol):
    """What :func:`feed_checked` needs of a :class:`~trustlayer.judge.matcher.Matcher`."""

    def feed(self, event: Event) -> Status: ...

    def fail(self, seq: int, reason: str, cause: str | None) -> Status: ...


def feed_checked(matcher: Judging, event: Event) -> tuple[Status, Fault | None]:
    """``matcher.feed(event)``; an event it cannot judge fails the run for good (cause
    :data:`STREAM_FAULT`) and is returned as a :class:`Fault`. Raises nothing."""
    try:
        return matcher.feed(event), None
    except UnjudgeableEvent as exc:
        fault = Fault("bad_image", f"event seq {event.seq} cannot be judged: {exc}")
    except Exception as exc:  # one event's bug must not pass or blame a run
        log.exception("run %s: the judge failed on seq %d", event.run_id, event.seq)
        fault = Fault("internal_error", f"event seq {event.seq} cannot be judged: the judge "
                      f"failed on it ({type(exc).__name__}: {exc})")
    return matcher.fail(event.seq, fault.reason, STREAM_FAULT), fault
