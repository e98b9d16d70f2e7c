"""The cause rules asked of each state after a failed run's last milestone, in order: the
first that finds names the step where the run went wrong (see
:mod:`trustlayer.judge.cause`)."""
from __future__ import annotations

from trustlayer.judge.cause_words import first_shown, states_shown
from trustlayer.judge.failed_run import AGENT_ERROR, PRODUCT_BUG, Explained, FailedRun
from trustlayer.judge.usual_steps import (
    agent_step,
    entered_text,
    expected_next,
    unusual_actions,
    usual_actions,
    went_elsewhere,
)
from trustlayer.observe.steps import NO_ACTION, in_words


def _unusual_step(run: FailedRun, k: int) -> Explained | None:
    here, history = run.history[k], run.history
    unusual = unusual_actions(run.model, run.position, run.known, here)
    if not unusual:
        return None
    did = f"the agent {in_words(unusual[0])}"
    return run.found(f"{did}, which successful runs never do at this point, and the run "
                     f"showed {states_shown(run.model, history[k:])}", AGENT_ERROR,
                     f"the screen showed {first_shown(run.model, history[k:])}", here.seq, did)


def _typed_its_own(run: FailedRun, k: int) -> Explained | None:
    history, here = run.history, run.history[k]
    entered = entered_text(here, history[:k + 1], history[run.start + 1:k + 1],
                       usual_actions(run.model, run.position, run.known))
    if not entered:
        return None
    return run.found(f"the agent entered {entered}, and the run showed "
                     f"{states_shown(run.model, history[k:])}, which successful runs never showed",
                     AGENT_ERROR, f"the screen showed {first_shown(run.model, history[k:])}",
                     here.seq, f"the agent entered {entered}")


def _led_elsewhere(run: FailedRun, k: int) -> Explained | None:
    here, known, model = run.history[k], run.known, run.model
    did = agent_step(here)
    if not (here.ids and known is not None and did
            and went_elsewhere(model, known.ids, did, here.ids)):
        return None
    return run.found(f"the agent {in_words(did)} as successful runs do, and the product "
                     f"showed '{model.name(here.ids[0])}', where successful runs saw what "
                     f"follows '{model.name(known.ids[0])}'", PRODUCT_BUG,
                     f"the screen showed {first_shown(model, [here])}", here.seq,
                     f"the agent {in_words(did)}")


def _product_news(run: FailedRun, k: int) -> Explained | None:
    here = run.history[k]
    if not here.novel:
        return None
    waited = here.via == [NO_ACTION]
    did = "did nothing (the screen changed on its own)" if waited \
        else f"{in_words(here.via[-1])} as successful runs do"
    return run.found(f"the agent {did}, and the product showed "
                     f"{states_shown(run.model, run.history[k:])}", PRODUCT_BUG,
                     f"the screen showed {first_shown(run.model, [here])}", here.seq,
                     None if waited else f"the agent {in_words(here.via[-1])}")


#: What a state after the last milestone may show, in the order the rules are asked.
STEP_RULES = (_unusual_step, _typed_its_own, _led_elsewhere, _product_news)


def first_step_finding(run: FailedRun) -> Explained | None:
    """The first finding of :data:`STEP_RULES` on the states after the last milestone
    (files changed by no action of the agent before them), `run.known` kept up to date."""
    history, model = run.history, run.model
    for k in range(run.start + 1, len(history)):
        here = history[k]
        if here.files_moved:
            return run.found("files changed with no action of the agent (the environment "
                             f"lost or altered its work), and the run showed "
                             f"{states_shown(model, history[k:])}", PRODUCT_BUG,
                             "the files showed changes no action of the agent made", here.seq)
        if run.known is not None and set(here.ids) & expected_next(model, run.known):
            run.known = here
            continue
        for rule in STEP_RULES:
            if (found := rule(run, k)) is not None:
                return found
        if here.ids:
            run.known = here
    return None
