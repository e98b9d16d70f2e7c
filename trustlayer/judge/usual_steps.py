"""What successful runs do at a point of a run, asked by the rules of
:mod:`trustlayer.judge.cause`: the actions usual there, where an action led them, what
they expect next, and what a failed run did otherwise (typed its own text, answered a
check)."""
from __future__ import annotations

from collections.abc import Sequence

from trustlayer.judge.history import Observed
from trustlayer.judge.phases import phase_gaps
from trustlayer.model import Model
from trustlayer.observe.canonical import PLACE_PREFIXES
from trustlayer.observe.steps import NO_ACTION, PASSIVE, TYPED, typed_words


def usual_actions(model: Model, position: int, known: Observed | None) -> set[str]:
    """What successful runs did anywhere in the phase of the run's next milestone
    (`position`), and from the state the run was in."""
    gaps = model.segment_actions
    usual = set().union(*(gaps[i] for i in phase_gaps(model, position) if i < len(gaps)))
    if known is not None:
        usual |= set().union(*(model.out_actions(s) for s in known.ids))
    return usual | {NO_ACTION}


def unusual_actions(model: Model, position: int, known: Observed | None,
             entry: Observed) -> list[str]:
    """The actions leading to `entry` that successful runs never took at this point;
    waiting or scrolling is never one (the product stays as it is), nor an answer the
    agent reported (its value is judged against what the screen showed)."""
    usual = usual_actions(model, position, known)
    return [a for a in entry.via if a not in usual and not a.startswith(PASSIVE)
            and not a.startswith(tuple(f"{call}:" for call in model.required_outputs))]


def agent_step(entry: Observed) -> str | None:
    """The agent's last action leading to `entry` that is no mere wait or look."""
    return next((a for a in reversed(entry.via)
                 if a != NO_ACTION and not a.startswith(PASSIVE)), None)


def _typed(entries: Sequence[Observed]) -> list[str]:
    return [a for entry in entries for a in entry.via if a.startswith(TYPED)]


def went_elsewhere(model: Model, sources: Sequence[str], action: str,
                    reached: Sequence[str]) -> bool:
    """Whether successful runs took `action` from one of `sources` and it never led them
    to any of `reached`, a place (a page, a window): the product answered the agent's
    usual step otherwise."""
    if not any(t.startswith(PLACE_PREFIXES) for sid in reached
               for t in model.states[sid].profile.salient_templates):
        return False  # no address or title to tell where the product went (a tool's report)
    targets = {edge["target"] for edge in model.edges
               if edge["source"] in sources and action in edge["actions"]}
    return bool(targets) and not targets & set(reached)


def entered_text(entry: Observed, so_far: Sequence[Observed], phase: Sequence[Observed],
             usual: set[str]) -> str | None:
    """What the agent typed that made `entry` a state no successful run showed: words it
    typed (`so_far`) that `entry` shows as news (a misspelt name saved), else text typed
    since the last milestone (`phase`) that successful runs never typed (`usual`)."""
    if entry.ids:
        return None
    if entry.novel:
        typed = typed_words(_typed(so_far))
        words = [w for w in entry.novel if w in typed]
        return f"'{words[0]}'" if words else None
    odd = [a for a in _typed(phase) if a not in usual]
    return f"'{odd[-1].split(':', 2)[-1]}'" if odd else None


def answers_check(model: Model, entry: Observed) -> bool:
    """Whether `entry` answers a check of the agent's work (its news is the agent's own
    bug reported, not the product refusing a step)."""
    checks = {*model.checks, *model.some_checks, *model.overcome}
    return any(a.rsplit(":", 1)[0] in checks for a in entry.via)


def expected_next(model: Model, known: Observed) -> set[str]:
    return set(known.ids).union(*(model.successors(s) for s in known.ids))
