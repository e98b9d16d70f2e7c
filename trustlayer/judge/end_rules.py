"""The cause rules asked of how a failed run ended, when no state after its last milestone
told (:mod:`trustlayer.judge.step_rules`): in order, the last always finds (see
:mod:`trustlayer.judge.cause`)."""
from __future__ import annotations

from collections.abc import Sequence

from trustlayer.graph_marks import SUCCESS
from trustlayer.judge.cause_words import first_shown, states_shown
from trustlayer.judge.failed_run import AGENT_ERROR, PRODUCT_BUG, Explained, FailedRun
from trustlayer.judge.reasons import quoted
from trustlayer.judge.usual_steps import agent_step, answers_check, unusual_actions, went_elsewhere
from trustlayer.observe.steps import NO_ACTION, PASSIVE, in_words


def _lost_way(run: FailedRun) -> Explained | None:
    if run.known is not None:
        return None
    return run.found("the run showed nothing successful runs show", AGENT_ERROR,
                     "the run showed nothing successful runs show", run.end)


def _never_came(run: FailedRun) -> Explained | None:
    known, history, model = run.known, run.history, run.model
    assert known is not None  # (asked after _lost_way)
    after = history[history.index(known) + 1:]
    if not after or any(entry.ids for entry in after):
        return None
    did = next((a for entry in after for a in entry.via
                if a != NO_ACTION and not a.startswith(PASSIVE)), NO_ACTION)
    return run.found(f"after '{model.name(known.ids[0])}' the agent {in_words(did)} as "
                     f"successful runs do, and the product never showed what they saw next "
                     f"({states_shown(model, after)})", PRODUCT_BUG,
                     f"the screen showed {first_shown(model, after)}", after[0].seq,
                     f"the agent {in_words(did)}")


def _stayed(run: FailedRun) -> Explained | None:
    ids, state = _last_known(run)
    last_step = next((did for entry in reversed(run.history) if (did := agent_step(entry))),
                     None)
    if last_step is None or not went_elsewhere(run.model, ids, last_step, ids):
        return None
    return run.found(f"the agent {in_words(last_step)} as successful runs do from '{state}', "
                     f"and the product stayed at '{state}'", PRODUCT_BUG,
                     f"the screen still showed {quoted(state)}", run.end,
                     f"the agent {in_words(last_step)}")


def _skipped_last_step(run: FailedRun) -> Explained | None:
    ids, state = _last_known(run)
    if SUCCESS not in set().union(*(run.model.successors(s) for s in ids)):
        return None
    return run.found(f"the run ended in '{state}' as successful runs end, without the step "
                     "they all take before it", AGENT_ERROR,
                     f"the screen showed {quoted(state)} without the step successful runs "
                     "take before it", run.end)


def _stalled(run: FailedRun) -> Explained | None:
    ids, state = _last_known(run)
    if _onward(run):
        return None
    return run.found(f"the run stalled in '{state}', which successful runs leave without any "
                     "action (the product did not move on)", PRODUCT_BUG,
                     f"the screen showed {quoted(state)} until the end", run.end)


def _refused(run: FailedRun) -> Explained | None:
    history, model = run.history, run.model
    first = min((i for i, e in enumerate(history) if run.last in e.ids), default=run.start)
    news = next((e for i, e in enumerate(history[first + 1:run.start], first + 1)
                 if e.novel and not e.ids and not unusual_actions(model, run.position, None, e)
                 and not answers_check(model, e)
                 and set(history[i - 1].ids) & set(history[i + 1].ids)), None)
    if news is None:  # (else the product refused the step and left all as it was)
        return None
    return run.found(f"the agent {in_words(news.via[-1])} as successful runs do, the product "
                     f"showed {states_shown(model, [news])}, and the run never got further",
                     PRODUCT_BUG, f"the screen showed {first_shown(model, [news])}", news.seq,
                     f"the agent {in_words(news.via[-1])}")


def _stopped(run: FailedRun) -> Explained:
    _, state = _last_known(run)
    return run.found(f"the agent stopped after '{state}', where successful runs went on: they "
                     f"{in_words(sorted(_onward(run))[0])}", AGENT_ERROR,
                     f"the agent stopped while the screen showed {quoted(state)}", run.end)


def _last_known(run: FailedRun) -> tuple[Sequence[str], str]:
    assert run.known is not None  # (the end rules after _lost_way)
    return run.known.ids, run.model.name(run.known.ids[0])


def _onward(run: FailedRun) -> set[str]:
    ids, _ = _last_known(run)
    return set().union(*(run.model.out_actions(s) for s in ids)) - {NO_ACTION}


#: How a run that showed nothing telling after its last milestone ended, in order; the
#: last always finds.
END_RULES = (_lost_way, _never_came, _stayed, _skipped_last_step, _stalled, _refused)


def end_finding(run: FailedRun) -> Explained:
    """The first finding of :data:`END_RULES`, else that the agent stopped too soon."""
    return next((found for rule in END_RULES if (found := rule(run)) is not None), None) \
        or _stopped(run)
