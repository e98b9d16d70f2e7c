"""When a topic partition stops delivering records: how long, and what to do.

faust-streaming 0.15 fetches only the partitions in its consumer's *active* set
(``Consumer._active_partitions``): every partition is paused at a rebalance and resumed
when table recovery completes (``Recovery.on_recovery_completed`` → ``resume_partitions``,
``perform_seek``), which returns early, before the resume, when another rebalance started
meanwhile (a worker that missed heartbeats is dropped and rejoins); records fetched around
a rebalance are dropped after the fetcher moved past them. A partition left paused gets no
more records, and a seek alone does not bring them (a paused partition is never asked for):
the stall seen under load, where seeking back never helped.

:class:`StallGuard` tells, from each partition's last progress, its next offset to process
and its high-water mark, which partitions stall (records wait, none processed for
``stall_seconds``: resume and seek back) and when to give up on the consumer (still
stalled after ``restart_seconds``: the worker restarts itself; the changelog keeps every
open run).
"""
from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass, field

OK, STALLED, WAIT, RESTART = "ok", "stalled", "wait", "restart"


@dataclass
class StallGuard:
    """Per-partition stall detection.

    ``check`` says ``stalled`` when records have waited ``stall_seconds`` with no progress
    (act: resume and seek back), ``wait`` until the action had ``stall_seconds`` to help,
    ``stalled`` again, and ``restart`` once nothing was processed for ``restart_seconds``.

    >>> guard = StallGuard(stall_seconds=5, restart_seconds=30)
    >>> [guard.check("p0", now, progress=8, position=4, highwater=9) for now in (10, 14, 15, 19)]
    ['ok', 'stalled', 'wait', 'stalled']
    >>> guard.check("p0", now=38, progress=8, position=4, highwater=9)
    'restart'
    >>> guard.check("p0", now=39, progress=39, position=9, highwater=9)
    'ok'

    Idleness is no stall: after a quiet minute (the last progress long ago), a burst is
    measured from the last check that found nothing waiting.

    >>> guard.check("p0", now=100, progress=39, position=9, highwater=9)
    'ok'
    >>> guard.check("p0", now=101, progress=39, position=9, highwater=900)
    'ok'
    """

    stall_seconds: float = 5.0
    restart_seconds: float = 30.0
    #: when something was last done about each stalled partition
    acted: dict[Hashable, float] = field(default_factory=dict)
    #: when each partition was last seen with nothing waiting
    quiet: dict[Hashable, float] = field(default_factory=dict)

    def check(self, tp: Hashable, now: float, progress: float, position: int | None,
              highwater: int | None) -> str:
        """What `tp` needs: records wait (``highwater > position``) and nothing was
        processed since `progress` (seconds, the clock of `now`) nor since the partition
        was last seen with nothing waiting (the records of a burst after an idle spell
        arrived after that)."""
        waiting = position is not None and highwater is not None and highwater > position
        if not waiting:
            self.quiet[tp] = now
        progress = max(progress, self.quiet.get(tp, progress))
        if not waiting or now - progress < self.stall_seconds:
            self.acted.pop(tp, None)
            return OK
        if now - progress >= self.restart_seconds:
            return RESTART
        if now - self.acted.get(tp, float("-inf")) >= self.stall_seconds:
            self.acted[tp] = now
            return STALLED
        return WAIT

    def forget(self, keep: set) -> None:
        """Drop partitions no longer assigned."""
        self.acted = {tp: t for tp, t in self.acted.items() if tp in keep}
        self.quiet = {tp: t for tp, t in self.quiet.items() if tp in keep}
