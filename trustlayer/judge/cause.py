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
from dataclasses import dataclass

from trustlayer.graph_marks import SUCCESS
from trustlayer.judge.history import Observed
from trustlayer.judge.phases import phase_gaps, where
from trustlayer.judge.reasons import (
    MISSING_MILESTONE,
    SELF_REPORT_FAILURE,
    UNACCEPTED_END,
    Reason,
    listed,
    quoted,
)
from trustlayer.judge.signs import Sign
from trustlayer.model import Model
from trustlayer.observe.canonical import PLACE_PREFIXES
from trustlayer.observe.steps import NO_ACTION, PASSIVE, TYPED, in_words, typed_words

PRODUCT_BUG, AGENT_ERROR = "product_bug", "agent_error"


def _shown(model: Model, entries: Sequence[Observed]) -> str:
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


def _usual(model: Model, position: int, known: Observed | None) -> set[str]:
    """What successful runs did anywhere in the phase of the run's next milestone
    (`position`), and from the state the run was in."""
    gaps = model.segment_actions
    usual = set().union(*(gaps[i] for i in phase_gaps(model, position) if i < len(gaps)))
    if known is not None:
        usual |= set().union(*(model.out_actions(s) for s in known.ids))
    return usual | {NO_ACTION}


def _unusual(model: Model, position: int, known: Observed | None,
             entry: Observed) -> list[str]:
    """The actions leading to `entry` that successful runs never took at this point;
    waiting or scrolling is never one (the product stays as it is), nor an answer the
    agent reported (its value is judged against what the screen showed)."""
    usual = _usual(model, position, known)
    return [a for a in entry.via if a not in usual and not a.startswith(PASSIVE)
            and not a.startswith(tuple(f"{call}:" for call in model.required_outputs))]


def _by_agent(entry: Observed) -> str | None:
    """The agent's last action leading to `entry` that is no mere wait or look."""
    return next((a for a in reversed(entry.via)
                 if a != NO_ACTION and not a.startswith(PASSIVE)), None)


def _typed(entries: Sequence[Observed]) -> list[str]:
    return [a for entry in entries for a in entry.via if a.startswith(TYPED)]


def _went_elsewhere(model: Model, sources: Sequence[str], action: str,
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


def _entered(entry: Observed, so_far: Sequence[Observed], phase: Sequence[Observed],
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


def _checked(model: Model, entry: Observed) -> bool:
    """Whether `entry` answers a check of the agent's work (its news is the agent's own
    bug reported, not the product refusing a step)."""
    checks = {*model.checks, *model.some_checks, *model.overcome}
    return any(a.rsplit(":", 1)[0] in checks for a in entry.via)


def _expected(model: Model, known: Observed) -> set[str]:
    return set(known.ids).union(*(model.successors(s) for s in known.ids))


def _unaccepted_end(model: Model, history: Sequence[Observed]) -> str:
    ends = " or ".join(f"'{model.name(s)}'" for s in model.accepting[:3])
    shown = _shown(model, history[-1:]) if history else "nothing"
    return f"every milestone reached, but the run ended in {shown}, not where successful " \
           f"runs end ({ends})"


def _brief(model: Model, entries: Sequence[Observed]) -> str:
    """What the first of `entries` showed, in a few words for the short reason."""
    entry = entries[0] if entries else None
    if entry is not None and entry.ids:
        return quoted(model.name(entry.ids[0]))
    if entry is not None and (entry.shown or entry.novel):
        return f"'{entry.shown}'" if entry.shown else listed(entry.novel)
    return "a screen without text no successful run showed"


def _headline(model: Model, missing: str | None, last: str | None,
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


Explained = tuple[str, str, Reason]  # details, cause, the short reason


@dataclass
class _Failure:
    """What the rules read of a run that failed, and where the scan of its states is:
    `start` is the row of its last milestone, `known` the last row like what successful
    runs show next."""

    model: Model
    history: Sequence[Observed]
    position: int
    last: str | None
    headline: Sign
    start: int
    known: Observed | None

    def found(self, details: str, cause: str, shown: str, seq: int | None,
              action: str | None = None) -> Explained:
        """The rule's finding: `details` after the headline, the blame, the short reason."""
        return (f"{self.headline.reason}: {details}", cause,
                Reason(self.headline.code, self.headline.expected, shown, seq, action))

    @property
    def end(self) -> int | None:
        return self.history[-1].seq if self.history else None


def _unusual_step(run: _Failure, k: int) -> Explained | None:
    here, history = run.history[k], run.history
    unusual = _unusual(run.model, run.position, run.known, here)
    if not unusual:
        return None
    did = f"the agent {in_words(unusual[0])}"
    return run.found(f"{did}, which successful runs never do at this point, and the run "
                     f"showed {_shown(run.model, history[k:])}", AGENT_ERROR,
                     f"the screen showed {_brief(run.model, history[k:])}", here.seq, did)


def _typed_its_own(run: _Failure, k: int) -> Explained | None:
    history, here = run.history, run.history[k]
    entered = _entered(here, history[:k + 1], history[run.start + 1:k + 1],
                       _usual(run.model, run.position, run.known))
    if not entered:
        return None
    return run.found(f"the agent entered {entered}, and the run showed "
                     f"{_shown(run.model, history[k:])}, which successful runs never showed",
                     AGENT_ERROR, f"the screen showed {_brief(run.model, history[k:])}",
                     here.seq, f"the agent entered {entered}")


def _led_elsewhere(run: _Failure, k: int) -> Explained | None:
    here, known, model = run.history[k], run.known, run.model
    did = _by_agent(here)
    if not (here.ids and known is not None and did
            and _went_elsewhere(model, known.ids, did, here.ids)):
        return None
    return run.found(f"the agent {in_words(did)} as successful runs do, and the product "
                     f"showed '{model.name(here.ids[0])}', where successful runs saw what "
                     f"follows '{model.name(known.ids[0])}'", PRODUCT_BUG,
                     f"the screen showed {_brief(model, [here])}", here.seq,
                     f"the agent {in_words(did)}")


def _product_news(run: _Failure, k: int) -> Explained | None:
    here = run.history[k]
    if not here.novel:
        return None
    waited = here.via == [NO_ACTION]
    did = "did nothing (the screen changed on its own)" if waited \
        else f"{in_words(here.via[-1])} as successful runs do"
    return run.found(f"the agent {did}, and the product showed "
                     f"{_shown(run.model, run.history[k:])}", PRODUCT_BUG,
                     f"the screen showed {_brief(run.model, [here])}", here.seq,
                     None if waited else f"the agent {in_words(here.via[-1])}")


#: What a state after the last milestone may show, in the order the rules are asked.
STEP_RULES = (_unusual_step, _typed_its_own, _led_elsewhere, _product_news)


def _lost_way(run: _Failure) -> Explained | None:
    if run.known is not None:
        return None
    return run.found("the run showed nothing successful runs show", AGENT_ERROR,
                     "the run showed nothing successful runs show", run.end)


def _never_came(run: _Failure) -> Explained | None:
    known, history, model = run.known, run.history, run.model
    assert known is not None  # (asked after _lost_way)
    after = history[history.index(known) + 1:]
    if not after or any(entry.ids for entry in after):
        return None
    did = next((a for entry in after for a in entry.via
                if a != NO_ACTION and not a.startswith(PASSIVE)), NO_ACTION)
    return run.found(f"after '{model.name(known.ids[0])}' the agent {in_words(did)} as "
                     f"successful runs do, and the product never showed what they saw next "
                     f"({_shown(model, after)})", PRODUCT_BUG,
                     f"the screen showed {_brief(model, after)}", after[0].seq,
                     f"the agent {in_words(did)}")


def _stayed(run: _Failure) -> Explained | None:
    ids, state = _last_known(run)
    last_step = next((did for entry in reversed(run.history) if (did := _by_agent(entry))),
                     None)
    if last_step is None or not _went_elsewhere(run.model, ids, last_step, ids):
        return None
    return run.found(f"the agent {in_words(last_step)} as successful runs do from '{state}', "
                     f"and the product stayed at '{state}'", PRODUCT_BUG,
                     f"the screen still showed {quoted(state)}", run.end,
                     f"the agent {in_words(last_step)}")


def _skipped_last_step(run: _Failure) -> Explained | None:
    ids, state = _last_known(run)
    if SUCCESS not in set().union(*(run.model.successors(s) for s in ids)):
        return None
    return run.found(f"the run ended in '{state}' as successful runs end, without the step "
                     "they all take before it", AGENT_ERROR,
                     f"the screen showed {quoted(state)} without the step successful runs "
                     "take before it", run.end)


def _stalled(run: _Failure) -> Explained | None:
    ids, state = _last_known(run)
    if _onward(run):
        return None
    return run.found(f"the run stalled in '{state}', which successful runs leave without any "
                     "action (the product did not move on)", PRODUCT_BUG,
                     f"the screen showed {quoted(state)} until the end", run.end)


def _refused(run: _Failure) -> Explained | None:
    history, model = run.history, run.model
    first = min((i for i, e in enumerate(history) if run.last in e.ids), default=run.start)
    news = next((e for i, e in enumerate(history[first + 1:run.start], first + 1)
                 if e.novel and not e.ids and not _unusual(model, run.position, None, e)
                 and not _checked(model, e) and set(history[i - 1].ids) & set(history[i + 1].ids)),
                None)
    if news is None:  # (else the product refused the step and left all as it was)
        return None
    return run.found(f"the agent {in_words(news.via[-1])} as successful runs do, the product "
                     f"showed {_shown(model, [news])}, and the run never got further",
                     PRODUCT_BUG, f"the screen showed {_brief(model, [news])}", news.seq,
                     f"the agent {in_words(news.via[-1])}")


def _stopped(run: _Failure) -> Explained:
    _, state = _last_known(run)
    return run.found(f"the agent stopped after '{state}', where successful runs went on: they "
                     f"{in_words(sorted(_onward(run))[0])}", AGENT_ERROR,
                     f"the agent stopped while the screen showed {quoted(state)}", run.end)


def _last_known(run: _Failure) -> tuple[Sequence[str], str]:
    assert run.known is not None  # (the end rules after _lost_way)
    return run.known.ids, run.model.name(run.known.ids[0])


def _onward(run: _Failure) -> set[str]:
    ids, _ = _last_known(run)
    return set().union(*(run.model.out_actions(s) for s in ids)) - {NO_ACTION}


#: How a run that showed nothing telling after its last milestone ended, in order; the
#: last always finds.
END_RULES = (_lost_way, _never_came, _stayed, _skipped_last_step, _stalled, _refused)


def _scanned(run: _Failure) -> Explained | None:
    """The first finding of :data:`STEP_RULES` on the states after the last milestone
    (files changed by no action of the agent before them), `run.known` kept up to date."""
    history, model = run.history, run.model
    for k in range(run.start + 1, len(history)):
        here = history[k]
        if here.files_moved:
            return run.found("files changed with no action of the agent (the environment "
                             f"lost or altered its work), and the run showed "
                             f"{_shown(model, history[k:])}", PRODUCT_BUG,
                             "the files showed changes no action of the agent made", here.seq)
        if run.known is not None and set(here.ids) & _expected(model, run.known):
            run.known = here
            continue
        for rule in STEP_RULES:
            if (found := rule(run, k)) is not None:
                return found
        if here.ids:
            run.known = here
    return None


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
        headline = _headline(model, missing, last, history)
    elif headline.code == SELF_REPORT_FAILURE:  # what successful runs showed says more
        headline = headline._replace(expected=_headline(model, missing, last, history).expected)
    start = max((i for i, e in enumerate(history) if last in e.ids), default=-1)
    run = _Failure(model, history, position, last, headline, start,
                   history[start] if start >= 0 else None)
    if expected_shown:  # read the wrong thing off a product that showed the right one
        return run.found("its screen showed that value, as the screens of successful runs "
                         "did, and the agent gave another", AGENT_ERROR,
                         f"its screen showed the expected value and {headline.shown}", run.end)
    if output_shown and history and history[-1].ends:  # a wrong value shown where runs end
        return run.found("the run ended as successful runs end, and the agent gave the value "
                         "the product showed it", PRODUCT_BUG,
                         f"its screen showed the wrong value and {headline.shown}", run.end)
    return _scanned(run) or next((found for rule in END_RULES
                                  if (found := rule(run)) is not None), None) or _stopped(run)
