"""Where a runner's events go. A sink is anything with ``write(event)`` and ``close()``
(either may be a coroutine function, for :class:`~trustlayer.runner.run.AsyncRun`); this
module holds the one of the core, a trace directory in the file format. The Kafka sink
lives on the stream side (``stream.kafka.runner_sink``), as the core never imports Kafka."""
from __future__ import annotations

import base64
import json
from collections.abc import Awaitable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from typing_extensions import Self


class Sink(Protocol):
    """Takes validated events of any number of runs, in order within each run."""

    def write(self, event: dict[str, Any]) -> None | Awaitable[None]: ...

    def close(self) -> None | Awaitable[None]: ...


class TraceDir:
    """A trace directory: one ``RUN_ID.jsonl`` per run, screenshots sent as ``data:`` URIs
    written beside them as ``shots/RUN_ID/SEQ.EXT`` and referred to by that path, so the
    directory reads with ``trustlayer learn``/``validate`` as it is.

    >>> import tempfile
    >>> with TraceDir(tempfile.mkdtemp()) as sink:
    ...     sink.write({"run_id": "r1", "seq": 0, "kind": "state", "observation": {"text": "x"}})
    ...     print(sorted(p.name for p in sink.directory.iterdir()))
    ['r1.jsonl']
    """

    def __init__(self, directory: str | Path):
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)

    def write(self, event: dict[str, Any]) -> None:
        """Append `event` to its run's file (its screenshot first written as a file)."""
        run_id = event["run_id"]
        if "/" in run_id or run_id.startswith("."):  # a file name, kept inside the directory
            raise ValueError(f"run_id '{run_id}' cannot name a trace file")
        observation = event.get("observation") or {}
        shot = observation.get("screenshot")
        if isinstance(shot, str) and shot.startswith("data:"):
            event = {**event, "observation": {**observation,
                                              "screenshot": self._save(shot, event)}}
        # allow_nan=False: a bare NaN is no JSON (other readers refuse it); said before
        # the file is touched
        line = json.dumps(event, ensure_ascii=False, allow_nan=False) + "\n"
        with open(self.directory / f"{run_id}.jsonl", "a", encoding="utf-8") as out:
            out.write(line)

    def _save(self, uri: str, event: dict[str, Any]) -> str:
        header, _, payload = uri.partition(",")
        extension = header.removeprefix("data:image/").split(";")[0]
        relative = Path("shots") / event["run_id"] / f"{event['seq']}.{extension}"
        (self.directory / relative.parent).mkdir(parents=True, exist_ok=True)
        (self.directory / relative).write_bytes(base64.b64decode(payload))
        return relative.as_posix()

    def close(self) -> None:
        """Nothing is held open between events (each write appends and closes)."""

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
