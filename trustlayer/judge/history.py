"""What the matcher keeps of each state a run showed: one :class:`Observed` per state, in
order (``Matcher.history``), read for the cause of a failure (:mod:`trustlayer.judge.cause`),
the phases a run went through and the report's frames (:mod:`trustlayer.judge.explain`).

A snapshot stores each row as the list of its fields in :data:`HISTORY_FIELDS` order;
:func:`row_of` reads it back, and also the rows older versions wrote (dicts, or lists
written before a field was added: it takes its default).
"""
from __future__ import annotations

from bisect import bisect_left
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

from trustlayer.judge.quotes import telling_line
from trustlayer.observe.steps import action_signatures

if TYPE_CHECKING:
    from trustlayer.model import Model
    from trustlayer.observe.steps import Step
    from trustlayer.observe.trace_events import Observation


class Observed(NamedTuple):
    """One state of a run as the matcher saw it.

    >>> row = Observed(3, 12.5, ["s2"], ["click:Save"])
    >>> row_of(list(row)) == row, row_of({"seq": 3, "ts": 12.5, "ids": ["s2"],
    ...                                  "via": ["click:Save"]}) == row
    (True, True)
    """

    seq: int
    ts: float
    #: the model states it matched (none: a state no successful run showed)
    ids: Sequence[str]
    #: signatures of the actions that led to it (``NO_ACTION``: it changed on its own)
    via: Sequence[str]
    #: when it matched nothing: words in it that no training state showed (at most 8)
    novel: Sequence[str] = ()
    #: like the states where successful runs end (evidence of the goal)
    ends: bool = False
    #: files changed with no action of the agent
    files_moved: bool = False
    #: when it matched nothing or showed news beside what it matched: the line that
    #: tells it, verbatim and shortened (:func:`trustlayer.judge.quotes.telling_line`)
    shown: str = ""


def observed(model: Model, step: Step, observation: Observation, known: Sequence[str],
             novel: Sequence[str], ends: bool, history: Sequence[Observed],
             position: int, beside: Sequence[str] = ()) -> Observed:
    """The row of `step`, which matched the `known` model states and holds the `novel`
    words; one that matched nothing, or holds words no training state showed `beside`
    what it matched (a tool's error), is told by its line (:func:`telling_line`), against
    what successful runs showed after the run's last row (`history`) and its next
    milestone (`position`)."""
    told = not known or beside
    shown = telling_line(model, step.fingerprint, observation, novel or beside,
                         history[-1].ids if history else (), position) if told else ""
    return Observed(step.seq, step.ts, known, action_signatures(step), novel[:8], ends,
                    step.files_moved, shown)


def row_index(history: Sequence[Observed], seq: int) -> int | None:
    """The index in `history` of the row of event `seq`, or None when no state has that
    seq (rows are in seq order: found, not scanned, so a long run costs no more)."""
    row = bisect_left(history, seq, key=lambda entry: entry.seq)
    return row if row < len(history) and history[row].seq == seq else None


#: The fields of a row, in the order a snapshot lists them.
HISTORY_FIELDS = Observed._fields


def row_of(data: Sequence[Any] | dict[str, Any]) -> Observed:
    """A history row from a snapshot: the list of its fields, or a dict (older versions)."""
    if isinstance(data, dict):
        return Observed(**{name: data[name] for name in HISTORY_FIELDS if name in data})
    return Observed(*data)
