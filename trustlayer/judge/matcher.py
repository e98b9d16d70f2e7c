"""Incremental matching of one run against a model: one event in, the run's status out.

The essential states must appear in order, extra states allowed (skip-till-next-match);
interruptions among them (:func:`trustlayer.learn.learner._interruptions`) may be skipped.
A run fails for certain when it ends without every milestone or when a negative
milestone appears; it is ``at_risk`` (an early warning, not a failure) when it shows a
state whose dominating milestone has not been seen yet. A sign of failure
(:mod:`trustlayer.judge.signs`) fails a run whatever milestones it reached. The verdict
never reads the run's own ``outcome``; of its ``self_report`` only a report of failure
counts (as a sign). The batch validator is a loop over
:meth:`Matcher.feed`; the streaming worker runs the same code.

This module feeds events and matches each state; the milestones reached are kept by
:mod:`trustlayer.judge.milestones`, the verdict made final by :mod:`trustlayer.judge.run_end`
(both parts of :class:`Matcher`).
"""
from __future__ import annotations

from trustlayer.compare.endings import at_an_end_place, ends_like_success
from trustlayer.compare.index import index_of
from trustlayer.compare.llm import LLMJudge
from trustlayer.compare.typed_text import typed_tokens
from trustlayer.judge.effects import EffectWatch
from trustlayer.judge.faults import feed_checked
from trustlayer.judge.history import Observed, observed, row_index
from trustlayer.judge.lookup import matching_states, own_words, reshaped
from trustlayer.judge.outputs import OutputLedger
from trustlayer.judge.overlay import Overlay
from trustlayer.judge.reasons import (
    FILES_MOVED,
    NEGATIVE_MILESTONE,
    Reason,
    quoted,
)
from trustlayer.judge.run_end import RunEnd
from trustlayer.judge.signs import FailureWatch
from trustlayer.judge.status import FAILED, Status
from trustlayer.model import Model
from trustlayer.observe.edits import RemovalLedger, changed_in_facts
from trustlayer.observe.fingerprints import Fingerprint
from trustlayer.observe.steps import Step, StepBuilder
from trustlayer.observe.trace_events import Event, Observation, Run


class Matcher(RunEnd):
    """Judges one run incrementally, River-style: ``feed(event) -> Status``.

    Parameters
    ----------
    model : the task's model.
    llm : optional LLM judge for pairs the cheap tiers leave unsure (off when None);
        at most ``model.settings.llm.max_calls_per_run`` calls are made for the run.
    """

    def __init__(self, model: Model, llm: LLMJudge | None = None):
        self.model, self.llm = model, llm
        self.builder = StepBuilder(model.settings)
        self.position = 0
        self.history: list[Observed] = []  # one row per state the run showed
        self.matched_at: dict[str, int] = {}
        self.start_ts: float | None = None
        self.outputs = OutputLedger()
        self.effects = EffectWatch()  # what a conversation changed and told
        self.removals = RemovalLedger(model.required_removals)
        self.signs = FailureWatch()
        self.typed: tuple[tuple[str, ...], ...] = ()  # the texts the agent typed, as tokens
        self.reshaped: list[str] = []  # transient milestones met with other counts (each
        # the milestone reached by that step: see _observe)
        self.overlay = Overlay()  # lines that came over the run's screen and stayed
        self.status: Status | None = None  # the run's status after the last event fed

    @property
    def typed_words(self) -> frozenset[str]:
        """The words of the texts the agent typed: its own choice, no news when shown."""
        return own_words(self.typed)

    def _matches(self, fingerprint: Fingerprint,
                 overlay: frozenset[str] = frozenset()) -> list[str]:
        """The model states `fingerprint` is (:func:`~trustlayer.judge.lookup.matching_states`),
        the LLM calls it made counted against the run's budget."""
        asked = self.model.settings.llm
        budget = asked.max_calls_per_run - self.current.llm_calls \
            if self.llm is not None and asked.enabled else 0
        upcoming = self.model.essential[self.position:self.position + 1]
        found, calls = matching_states(self.model, fingerprint, self.typed,
                                       upcoming[0] if upcoming else None, overlay, self.llm,
                                       budget)
        self.current.llm_calls += calls
        return found

    def feed(self, event: Event) -> Status:
        """Take the run's next event (in `seq` order) and return the run's status."""
        if self.status is None:
            self.status = Status(event.run_id, event.task, model_version=self.model.version,
                                missing=[self.model.name(s) for s in self.model.essential])
            self.start_ts = event.ts
        status = self.current
        status.event_ts = event.ts
        if status.final:
            return status
        if self.model.effects is not None:  # a conversation: judged by what it changed
            return self._converse(event, event.seq)
        action = event.action if event.kind == "action" else None
        if action is not None:
            self.outputs.observe(self.model, action, self.builder.previous_lines)
        facts_before = self.builder.previous_facts
        if action is not None and action.type == "type" and action.value:
            # words the agent chose (a description it added) are no news when shown again
            text = typed_tokens(action.value)
            if sum(token.isalpha() for token in text) > 1:  # a phrase: no digit found anywhere
                self.typed += (text,)
        step = self.builder.feed(event)
        if step is not None and event.observation is not None:
            if self.model.required_removals:
                self.removals.observe(event.observation.text,
                                      changed_in_facts(facts_before, step.fingerprint.facts))
            self._observe(step, facts_before, event.observation)
        elif event.kind == "end":
            self.signs.self_report = event.self_report
            self.close(event.seq)
        return status

    def _observe(self, step: Step, facts_before: frozenset[str] | None,
                 observation: Observation) -> None:
        ids = self._matches(step.fingerprint) or self._beneath(step)
        negatives = [sid for sid in ids if sid in self.model.negative]
        known = [sid for sid in ids if sid not in self.model.negative]
        upcoming = self._upcoming_transient()
        if upcoming and upcoming not in known and reshaped(self.model, step.fingerprint,
                                                           upcoming):
            known.append(upcoming)
            self.reshaped.append(upcoming)
        novel = [word for word in index_of(self.model).novelty(step.fingerprint)
                 if word not in self.typed_words] if not known else []
        # a known state may hold news too (a tool's error beside the usual output)
        beside = index_of(self.model).novelty(step.fingerprint) \
            if known and self.model.check_files else []
        news = bool(novel or beside)
        self.signs.observe(self.model, step, facts_before, observation, known, news)
        ends = ends_like_success(self.model, step.fingerprint, known, self.typed_words) \
            or self.outputs.answered(self.model) and at_an_end_place(self.model, step.fingerprint)
        self.history.append(observed(self.model, step, observation, known, novel, ends,
                                     self.history, self.position, beside))
        if not known:
            self.current.unknown_states += 1
        if self.current.status == FAILED:
            return
        if negatives and not known:
            negative = self.model.states[negatives[0]]
            self._fail(negative.negative_cause or "product_bug",
                       Reason(NEGATIVE_MILESTONE, self._next_milestone(), f"the screen showed "
                              f"{quoted(negative.name)}, as failed runs did", step.seq),
                       f"negative milestone '{negative.name}' appeared")
            return
        if step.files_moved and not self.model.files_change_alone:
            self._fail("product_bug", Reason(FILES_MOVED, "files changed only by the agent",
                                             "the files showed changes no action of the agent "
                                             "made", step.seq),
                       "the files changed with no action of the agent, which no successful "
                       "run saw (the environment lost or altered its work)")
            return
        # a milestone where successful runs end is met by a state like all their ends
        # together (when it is none of their end states itself)
        pooled = ends and not set(known) & set(self.model.accepting)
        self._advance(known + (list(self.model.accepting) if pooled else []), step.seq)

    def _beneath(self, step: Step) -> list[str]:
        """The states `step` (none matched) is beneath the overlay (:mod:`.overlay`)."""
        found, came_with = self.overlay.beneath(
            self.model, step, self.history[-1].ids if self.history else (),
            self.model.essential[self.position:], self._matches)
        # the row of the state the notice came with
        covered = self.overlay.covered_seq
        row = row_index(self.history, covered) if came_with and covered is not None else None
        if row is not None and not self.history[row].ids:
            # the one older row that changes (a snapshot keeps it apart: resume.snapshot)
            self.history[row] = self.history[row]._replace(ids=came_with, novel=[])
            self._advance(came_with, self.history[row].seq)
        return found


def judged(model: Model, run: Run, llm: LLMJudge | None = None) -> Matcher:
    """The batch validator for one run: a matcher fed every event, its status final. A run
    without an end event is judged as if it had ended after its last event; an event that
    cannot be judged ends it (:func:`~trustlayer.judge.faults.feed_checked`)."""
    matcher = Matcher(model, llm)
    for event in run.events:
        if feed_checked(matcher, event)[1] is not None:
            return matcher
    if run.end is None:
        matcher.close(run.events[-1].seq)
    return matcher


def judge_run(model: Model, run: Run, llm: LLMJudge | None = None) -> Status:
    """The final status of `run` (see :func:`judged`)."""
    return judged(model, run, llm).current
