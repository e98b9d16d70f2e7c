"""A long run's record in parts. What grows with a run, a digest and an offset per event
and a history row per state, is sealed every :data:`PART_EVENTS` events into a part
written once under a key of its own (in the run's partition); the head, written at every
checkpoint, holds only what came since. Written whole, a record costs its run's length at
each checkpoint: 600 KB for a run of 10,000 events (docs/benchmarks.md, "A long run's
record").

A part lists where in each list its items start, so a list the run book empties (the
offsets of a run not learned from, the history of a run given up) is sealed again from 0;
putting the parts back in order, each one's items replace the list from its start on.
"""
from __future__ import annotations

import json
from typing import Any

from stream.judging.records import RunRecord, encoded

#: events sealed in a part (a head holds fewer: at most about 20 KB)
PART_EVENTS = 256
#: what a part holds, in the order of :attr:`RunRecord.sealed`
LISTS = ("digests", "offsets", "rows")
# a run's id may be any text: keys of parts and of heads whose id could look like one are
# written as JSON behind this character, and no other head key starts with it
_MARK = "\x00"


def head_key(run_id: str) -> str:
    """The store key of the run's record (its id, unless that starts with the mark)."""
    return _MARK + json.dumps(run_id) if run_id.startswith(_MARK) else run_id


def part_key(run_id: str, number: int) -> str:
    """The store key of the run's part `number`."""
    return _MARK + json.dumps([run_id, number])


def is_part_key(key: str) -> bool:
    return key.startswith(_MARK + "[")


def seal(rec: RunRecord, rows: list[list[Any]]) -> bytes:
    """The run's next part: its digests and offsets not sealed yet and `rows`, the history
    rows from ``rec.sealed[2]`` on; `rec` counts them sealed."""
    digests, offsets, rows_before = rec.sealed  # (how many of each are sealed)
    part = {"run_id": rec.run_id, "part": rec.parts, "digests": [digests, rec.digests[digests:]],
            "offsets": [offsets, rec.offsets[offsets:]], "rows": [rows_before, rows]}
    rec.sealed = [len(rec.digests), len(rec.offsets), rows_before + len(rows)]
    rec.parts += 1
    return encoded(part, rec.plain_numbers)


def unsealed(rec: RunRecord) -> int:
    """Events the run was fed since its last part was sealed."""
    return len(rec.digests) - rec.sealed[0]


def joined(rec: RunRecord, parts: list[bytes | dict | None]) -> list[list[Any]]:
    """Put the sealed digests and offsets of `rec` (a head just read) back in front of its
    own, from its `parts` (values as stored, in order); its sealed history rows are returned
    (for :func:`trustlayer.judge.resume.with_rows`). A part missing or not this run's is a
    ValueError: the record cannot be read whole."""
    lists: dict[str, list] = {name: [] for name in LISTS}
    for number, value in enumerate(parts):
        part = value if isinstance(value, dict) or value is None else json.loads(value)
        if part is None or part.get("run_id") != rec.run_id or part.get("part") != number:
            raise ValueError(f"run {rec.run_id!r}: part {number} of {rec.parts} is missing")
        for name in LISTS:
            start, items = part[name]
            del lists[name][start:]
            lists[name] += items
    count = dict(zip(LISTS, rec.sealed))
    if any(len(lists[name]) < count[name] for name in LISTS):
        raise ValueError(f"run {rec.run_id!r}: its parts hold fewer items than it sealed")
    rec.digests = lists["digests"][:count["digests"]] + rec.digests
    rec.offsets = lists["offsets"][:count["offsets"]] + rec.offsets
    return lists["rows"][:count["rows"]]
