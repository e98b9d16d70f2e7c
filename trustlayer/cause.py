"""Why a run failed, and whether the product or the agent is to blame.

The rule, at the first point after the last milestone reached where the run leaves
what successful runs do (the divergence):

* *product_bug*: the agent did there what successful runs do (an action with the same
  signature as one of theirs from that state, or no action: the screen changed on its
  own), but the product answered with a state successful runs never show there; or the
  run stalled in a state that successful runs only ever left through the product's own
  transition (a save that never completes).
* *agent_error*: the agent did something successful runs never do there, or stopped
  early in a state from which successful runs went on with an action of their own.
"""
from __future__ import annotations

from typing import Any, Sequence

from trustlayer.model import Model
from trustlayer.steps import NO_ACTION
PRODUCT_BUG, AGENT_ERROR = "product_bug", "agent_error"


def _shown(model: Model, entries: Sequence[dict[str, Any]]) -> str:
    names = []
    for entry in entries[:3]:
        name = model.name(entry["ids"][0]) if entry["ids"] else f"an unknown state (seq {entry['seq']})"
        if name not in names:
            names.append(name)
    return ", ".join(f"'{n}'" if not n.startswith("an unknown") else n for n in names)


def _divergence(model: Model, history: Sequence[dict[str, Any]], start: int) -> tuple[int, str] | None:
    """Index in `history` of the first unexpected step after `start`, and the cause."""
    for k in range(max(start, 0) + 1, len(history)):
        before, here = history[k - 1], history[k]
        if not before["ids"]:
            continue
        expected = set().union(*(model.successors(s) for s in before["ids"])) | set(before["ids"])
        if set(here["ids"]) & expected:
            continue
        usual = set().union(*(model.out_actions(s) for s in before["ids"]))
        cause = PRODUCT_BUG if here["via"] == NO_ACTION or here["via"] in usual else AGENT_ERROR
        return k, cause
    return None


def explain_failure(model: Model, history: Sequence[dict[str, Any]], position: int,
                    matched: Sequence[str]) -> tuple[str, str]:
    """Reason and cause for a run that ended without every milestone.

    `history` holds one entry per observed state: ``seq``, ``ids`` (model states it
    matched), ``via`` (signature of the action that led to it); `position` is the
    index of the first essential milestone not reached.
    """
    missing = next(s for s in model.essential[position:] if s not in model.soft)
    last = matched[-1] if matched else None
    where = f"after '{model.name(last)}'" if last else "from the start"
    reason = f"'{model.name(missing)}' never reached {where}"
    last_index = max((i for i, e in enumerate(history) if last in e["ids"]), default=-1) \
        if last else -1
    divergence = _divergence(model, history, last_index)
    if divergence is not None:
        k, cause = divergence
        action = history[k]["via"]
        did = "the screen changed on its own" if action == NO_ACTION else f"the agent did {action}"
        return (f"{reason}: {did} and the run showed {_shown(model, history[k:])} instead",
                cause)
    if not history:
        return f"{reason}: the run showed no state", AGENT_ERROR
    stalled = history[-1]
    if not stalled["ids"]:
        return f"{reason}: the run ended in {_shown(model, [stalled])}", AGENT_ERROR
    onward = set().union(*(model.out_actions(s) for s in stalled["ids"])) - {NO_ACTION}
    state = model.name(stalled["ids"][0])
    if not onward:
        return (f"{reason}: the run stalled in '{state}', which successful runs leave without "
                "any action (the product did not move on)", PRODUCT_BUG)
    return (f"{reason}: the agent stopped in '{state}'; successful runs went on with "
            f"{sorted(onward)[0]}", AGENT_ERROR)
