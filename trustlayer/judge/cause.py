"""Why a run failed, and whether the product or the agent is to blame.

The rule, walking the run from the last milestone it reached:

* *agent_error* at the first step where the agent did something successful runs never
  do at that point (an action signature none of them used between these milestones,
  nor from the state it was in), or where a state no successful run showed holds what
  the agent typed (its own value: a misspelt name, text appended to the old);
* *product_bug* at the first step where the agent's action led to a known state that
  the same action from the same state never led successful runs to (a save that lands
  back on the unchanged list);
* *product_bug* at the first step where the agent did what successful runs do (or
  nothing, or waited: the screen changed on its own) and the product showed what
  successful runs never show (words no training state contains: an error message, a
  refusal), or where files changed with no action of the agent (work lost);
* *product_bug* for a run that ended where successful runs end but gave a required
  output (an answer reported) another value, which its screen showed (a count cache);
* else, at the end: *product_bug* when, after the agent's last step that successful
  runs take too, the product never showed anything they saw (a page that never loads);
  *agent_error* when the run ended the way successful runs end but skipped a step they
  all take; *product_bug* when the agent took the step successful runs take from its
  last state to another and the product showed that state again; *product_bug* when it
  stalled in a state that successful runs only ever left through the product's own change
  (a save that never completes); *product_bug* when, since it first reached its last
  milestone, the agent's usual step once made the product show words no successful run saw
  and then the state before it again (a refused create), and the run got no further; else
  *agent_error* when the agent stopped where successful runs went on.
"""
from __future__ import annotations

from collections.abc import Sequence

from trustlayer.judge.cause_words import missing_headline
from trustlayer.judge.end_rules import end_finding
from trustlayer.judge.failed_run import AGENT_ERROR, PRODUCT_BUG, Explained, FailedRun
from trustlayer.judge.history import Observed
from trustlayer.judge.reasons import SELF_REPORT_FAILURE
from trustlayer.judge.signs import Sign
from trustlayer.judge.step_rules import first_step_finding
from trustlayer.model import Model


def explain_failure(model: Model, history: Sequence[Observed], position: int,
                    matched: Sequence[str], headline: Sign | None = None,
                    output_shown: bool = False,
                    expected_shown: bool = False) -> Explained:
    """Reason (the decision path), cause and the short reason for a run that ended without
    every milestone, with every milestone but not in a state where successful runs end, or
    with what `headline` says (a sign of failure, or a required output given another
    value): the first rule that finds, of the module docstring's, in its order.

    `history` holds one :class:`~trustlayer.judge.history.Observed` per state the run
    showed; `position` is the index of the first milestone not reached; `output_shown`
    tells whether the screen the agent gave a required output from showed the (wrong)
    value it gave, `expected_shown` whether it showed the value every successful run gave.
    """
    missing = next((s for s in model.essential[position:] if s not in model.soft), None)
    last = matched[-1] if matched else None
    if headline is None:
        headline = missing_headline(model, missing, last, history)
    elif headline.code == SELF_REPORT_FAILURE:  # what successful runs showed says more
        told = missing_headline(model, missing, last, history)
        headline = headline._replace(expected=told.expected)
    start = max((i for i, e in enumerate(history) if last in e.ids), default=-1)
    run = FailedRun(model, history, position, last, headline, start,
                    history[start] if start >= 0 else None)
    if expected_shown:  # read the wrong thing off a product that showed the right one
        return run.found("its screen showed that value, as the screens of successful runs "
                         "did, and the agent gave another", AGENT_ERROR,
                         f"its screen showed the expected value and {headline.shown}", run.end)
    if output_shown and history and history[-1].ends:  # a wrong value shown where runs end
        return run.found("the run ended as successful runs end, and the agent gave the value "
                         "the product showed it", PRODUCT_BUG,
                         f"its screen showed the wrong value and {headline.shown}", run.end)
    return first_step_finding(run) or end_finding(run)
