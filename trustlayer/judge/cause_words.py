"""How the cause of a failure is worded: the states a run showed, in a few words or named,
and the headline of a run whose failure no sign told."""
from __future__ import annotations

from collections.abc import Sequence

from trustlayer.judge.history import Observed
from trustlayer.judge.phases import where
from trustlayer.judge.reasons import MISSING_MILESTONE, UNACCEPTED_END, listed, quoted
from trustlayer.judge.signs import Sign
from trustlayer.model import Model


def states_shown(model: Model, entries: Sequence[Observed]) -> str:
    names: list[str] = []
    for entry in entries[:3]:
        if entry.ids:
            name = f"'{model.name(entry.ids[0])}'"
        elif entry.shown or entry.novel:
            told = entry.shown or " ".join(entry.novel[:4])
            name = f"a state never seen in successful runs ({told})"
        else:
            name = f"a state without text never seen in successful runs (seq {entry.seq})"
        if name not in names:
            names.append(name)
    return ", ".join(names)


def _unaccepted_end(model: Model, history: Sequence[Observed]) -> str:
    ends = " or ".join(f"'{model.name(s)}'" for s in model.accepting[:3])
    shown = states_shown(model, history[-1:]) if history else "nothing"
    return f"every milestone reached, but the run ended in {shown}, not where successful " \
           f"runs end ({ends})"


def first_shown(model: Model, entries: Sequence[Observed]) -> str:
    """What the first of `entries` showed, in a few words for the short reason."""
    entry = entries[0] if entries else None
    if entry is not None and entry.ids:
        return quoted(model.name(entry.ids[0]))
    if entry is not None and (entry.shown or entry.novel):
        return f"'{entry.shown}'" if entry.shown else listed(entry.novel)
    return "a screen without text no successful run showed"


def missing_headline(model: Model, missing: str | None, last: str | None,
              history: Sequence[Observed]) -> Sign:
    """The run's failure when no sign of failure tells it: a milestone it never reached,
    or an end where successful runs do not end."""
    if missing is None:
        return Sign(_unaccepted_end(model, history), None,
                    f"to end at {quoted(model.name(model.accepting[0]))}", "", UNACCEPTED_END)
    reason = f"'{model.name(missing)}' never reached " + (
        f"after '{model.name(last)}'" if last else "from the start")
    phase = where(model, missing)
    return Sign(f"{reason} ({phase})" if phase else reason, None,
                quoted(model.name(missing)), "", MISSING_MILESTONE)
