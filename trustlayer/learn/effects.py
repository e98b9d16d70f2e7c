"""Learn what successful conversations changed and told (:class:`EffectSpine`).

From 2-3 successful runs, ask little and ask it surely: a change is required when every
run made it with the same values (or, when they made it with several, with the values
they all agree on); any change is known when one of them made it with those values. What
the agent told is asked only of runs that made no change in common: a total every one of
them worked out and said, when nothing had told it to them.
"""
from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

from trustlayer.model_effects import EffectSpine, Required
from trustlayer.observe.conversation import Call, View, effect_calls, is_conversation, new_facts
from trustlayer.observe.trace_events import Run


def _agreed(views_per_run: Sequence[set[View]]) -> View:
    """The (key, value) pairs every run's calls of one tool had, where that key had one
    value in all of them."""
    pairs: list[set[tuple[str, str]]] = [set().union(*views) for views in views_per_run]
    common = set.intersection(*pairs)
    keys = defaultdict(set)
    for pair_set in pairs:
        for key, value in pair_set:
            keys[key].add(value)
    return tuple(sorted(pair for pair in common if len(keys[pair[0]]) == 1))


def _required(made: Sequence[Sequence[Call]]) -> tuple[Required, ...]:
    """The changes every run made: the same call everywhere, and for a tool every run
    changed something with in other ways, what they agree on."""
    per_run = [{(call.tool, call.view) for call in calls} for calls in made]
    exact = set.intersection(*per_run)
    required = [Required(tool, view) for tool, view in sorted(exact)]
    for tool in sorted(set.intersection(*({t for t, _ in calls} for calls in per_run))):
        if not any(r.tool == tool for r in required):
            required.append(Required(tool, _agreed([{v for t, v in calls if t == tool}
                                                    for calls in per_run])))
    return tuple(required)


def learn_effects(runs: Sequence[Run]) -> EffectSpine | None:
    """The spine of successful `runs`, or None when they are not all conversations."""
    if not runs or not all(is_conversation(run) for run in runs):
        return None
    attempts = [list(effect_calls(run.events)) for run in runs]
    made = [[call for call in calls if not call.refused] for calls in attempts]
    known: dict[str, set[View]] = defaultdict(set)
    for calls in made:
        for call in calls:
            known[call.tool].add(call.view)
    required = _required(made)
    told = set.intersection(*(new_facts(run) for run in runs)) if not required else set()
    answers: dict[str, set[str]] = defaultdict(set)
    for calls in made:
        for call in calls:
            answers[call.tool] |= call.words
    return EffectSpine({tool: tuple(sorted(views)) for tool, views in sorted(known.items())},
                       tuple(sorted({call.tool for calls in attempts for call in calls})),
                       {tool: tuple(sorted(words)) for tool, words in sorted(answers.items())},
                       required, tuple(sorted(told)))
