"""The Kafka sink's spool: where a runner's events go while the broker is away, so that an
agent keeps working through an outage and no run is lost. It is a trace directory (the
file format, :class:`~trustlayer.runner.sinks.TraceDir`) that ``trustlayer replay DIR``
publishes once the broker is back.

Invariant: a run is either safe on the broker (its ``end`` acknowledged) or, after the
broker failed, whole in the spool, from ``seq 0``. The events of a run the broker had
partly acknowledged are published again by the replay: the worker ignores an event it
already has with the same content, so the run is judged once, on every event."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from trustlayer.runner.sinks import TraceDir


class Spool:
    """The events of runs not yet safe on the broker (:meth:`keep`, :meth:`safe`), written
    to `directory` when the broker fails (:meth:`divert`); from then on every event goes
    there (:meth:`write`)."""

    def __init__(self, directory: str | Path):
        self.directory = Path(directory)
        self._unsafe: dict[str, list[dict[str, Any]]] = {}  # run id -> its events so far
        self._files: TraceDir | None = None
        self.runs: set[str] = set()  # the runs written to the spool

    @property
    def diverted(self) -> bool:
        """Whether the broker failed: events go to the spool."""
        return self._files is not None

    def keep(self, event: dict[str, Any]) -> None:
        """`event` was handed to the broker but is not acknowledged yet."""
        self._unsafe.setdefault(event["run_id"], []).append(event)

    def safe(self, run_id: str) -> None:
        """The broker acknowledged every event of `run_id`, its end included."""
        self._unsafe.pop(run_id, None)

    def divert(self) -> None:
        """The broker failed: write every run not safe on it, whole, and spool from now on."""
        if self._files is None:
            self._files = TraceDir(self.directory)
        for events in self._unsafe.values():
            for event in events:
                self.write(event)
        self._unsafe.clear()

    def write(self, event: dict[str, Any]) -> None:
        """Append `event` to its run's file in the spool."""
        assert self._files is not None, "divert() first"
        self._files.write(event)
        self.runs.add(event["run_id"])
