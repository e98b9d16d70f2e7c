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
"""
from __future__ import annotations

from bisect import bisect_left

from trustlayer.compare.endings import at_an_end_place, ends_like_success
from trustlayer.compare.index import index_of
from trustlayer.compare.llm import LLMJudge
from trustlayer.compare.typed_text import typed_tokens
from trustlayer.judge.cause import explain_failure
from trustlayer.judge.deadlines import overdue
from trustlayer.judge.effects import EffectWatch
from trustlayer.judge.faults import feed_checked
from trustlayer.judge.history import Observed, observed
from trustlayer.judge.lookup import matching_states, own_words, reshaped
from trustlayer.judge.outputs import OutputLedger
from trustlayer.judge.overlay import Overlay
from trustlayer.judge.reasons import (
    FILES_MOVED,
    KEPT_LINE,
    MILESTONES_REACHED,
    NEGATIVE_MILESTONE,
    NO_END,
    UNJUDGEABLE,
    WRONG_OUTPUT,
    Reason,
    passed_sentence,
    quoted,
)
from trustlayer.judge.signs import FailureWatch, Sign
from trustlayer.judge.status import AT_RISK, FAILED, INCOMPLETE, PASSED, RUNNING, Status
from trustlayer.model import Model
from trustlayer.observe.edits import RemovalLedger, changed_in_facts, describe
from trustlayer.observe.fingerprints import Fingerprint
from trustlayer.observe.steps import Step, StepBuilder
from trustlayer.observe.trace_events import Event, Observation, Run


class Matcher:
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
    def current(self) -> Status:
        """The run's status: made by :meth:`feed` from the first event, before anything else."""
        if self.status is None:
            raise RuntimeError("no event of the run was fed yet")
        return self.status

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
        news = bool(novel) or bool(known) and bool(self.model.check_files) \
            and bool(index_of(self.model).novelty(step.fingerprint))
        self.signs.observe(self.model, step, facts_before, observation, known, news)
        ends = ends_like_success(self.model, step.fingerprint, known, self.typed_words) \
            or self.outputs.answered(self.model) and at_an_end_place(self.model, step.fingerprint)
        self.history.append(observed(self.model, step, observation, known, novel, ends,
                                     self.history, self.position))
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
        # the row of the state the notice came with (rows are in seq order: found, not
        # scanned, so a long run costs no more per event)
        covered = self.overlay.covered_seq
        row = bisect_left(self.history, covered, key=lambda entry: entry.seq) \
            if came_with and covered is not None else len(self.history)
        if row < len(self.history) and not self.history[row].ids \
                and self.history[row].seq == covered:
            self.history[row] = self.history[row]._replace(ids=came_with, novel=[])
            self._advance(came_with, self.history[row].seq)
        return found

    def _next_milestone(self) -> str:
        """The next milestone to reach, quoted, for a short reason."""
        essential = self.model.essential[self.position:] or self.model.accepting
        return quoted(self.model.name(essential[0]))

    def _upcoming_transient(self) -> str | None:
        """The next milestone to reach, if it is a tool's report (``model.transient``)."""
        essential = self.model.essential
        upcoming = essential[self.position] if self.position < len(essential) else None
        return upcoming if upcoming in self.model.transient else None

    def _advance(self, ids: list[str], seq: int) -> None:
        essential, soft = self.model.essential, set(self.model.soft)
        for target in range(self.position, len(essential)):
            if essential[target] in ids:
                self.matched_at[essential[target]] = seq
                self.position = target + 1
                # one report meets the reports successful runs made one after another
                transient = self.model.transient
                while self.position < len(essential) and essential[self.position] in ids \
                        and essential[target] in transient \
                        and essential[self.position] in transient:
                    self.matched_at[essential[self.position]] = seq
                    self.position += 1
                self.current.warnings = []
                break
            if essential[target] not in soft:
                break
        else:
            target = None
        if target is None or self.position <= target:
            self._warn(ids)
        self._update(seq)

    def _warn(self, ids: list[str]) -> None:
        essential = self.model.essential
        for sid in ids:
            needed = sid if sid in essential else self.model.nearest_milestone.get(sid)
            if needed in essential and essential.index(needed) > self.position - (sid != needed):
                blocking = essential[self.position]
                if blocking in self.model.soft:
                    continue
                warning = (f"reached '{self.model.name(sid)}' before "
                           f"'{self.model.name(blocking)}'")
                if warning not in self.current.warnings:
                    self.current.warnings.append(warning)

    def _update(self, seq: int) -> None:
        essential = self.model.essential
        self.current.matched = [self.model.name(s) for s in essential if s in self.matched_at]
        self.current.missing = [self.model.name(s) for s in essential[self.position:]
                              if s not in self.model.soft]
        total = len(essential)
        self.current.coverage = round(len(self.matched_at) / total, 4) if total else 1.0
        done = self.position >= total \
            or all(s in self.model.soft for s in essential[self.position:])
        if done and self._accepted():
            self.current.status, self.current.code = PASSED, MILESTONES_REACHED
            self.current.reason = passed_sentence(len(self.matched_at), total)
            self.current.details = (f"every essential milestone reached ({len(self.matched_at)} "
                                   f"of {total}; the others are interruptions runs may skip), "
                                   "and the run ended where successful runs end")
            if self.current.detected_at_seq is None:
                self.current.detected_at_seq = seq
        else:
            self.current.status = AT_RISK if self.current.warnings else RUNNING

    def _accepted(self) -> bool:
        """Whether the run ended where successful runs end: its last state is such a
        state, or only extras came after one (states no successful run showed, with no
        word none of them showed: a spinner, a toast)."""
        for entry in reversed(self.history):
            if entry.ends:
                return True
            if entry.ids or entry.novel:
                return False
        return False

    def _converse(self, event: Event | None, seq: int) -> Status:
        """A conversation's event (None: it ended after `seq` without its end event), judged
        by what the run changed and told (:mod:`trustlayer.judge.effects`)."""
        if event is not None and event.kind == "state":  # a row for the report's frames
            self.history.append(Observed(event.seq, event.ts, [], [], []))
        status, found = self.current, self.effects.judge(event, seq, self.model.effects)
        status.matched, status.missing, status.coverage = found.progress
        if found.failure is not None:
            self._fail(*found.failure)
        elif found.passed is not None:
            status.status, status.code, status.reason = PASSED, MILESTONES_REACHED, found.passed
            status.final, status.detected_at_seq = True, seq
        return status

    def _route_warnings(self) -> list[str]:
        return [f"took a route no successful run took: skipped '{self.model.name(sid)}'"
                for sid in self.model.incidental if sid not in self.matched_at] + [
            f"showed '{self.model.name(sid)}' with other counts than every successful run"
            for sid in self.reshaped] + self.signs.notes(self.model)

    def _fail(self, cause: str | None, why: Reason, details: str, seq: int | None = None) -> None:
        """Fail the run for good at event `seq` (else where `why` found it, the short reason)."""
        self.current.fail(cause, why.code, why.sentence(cause), details, why.seq, seq)

    def fail(self, seq: int | None, reason: str, cause: str | None,
             code: str = UNJUDGEABLE) -> Status:
        """Fail the run for good at event `seq`, for a `reason` outside what it showed (its
        own details; e.g. an event that cannot be judged: :mod:`trustlayer.judge.faults`),
        after the run's first event was fed (:meth:`feed` makes its status first)."""
        self._fail(cause, Reason(code, "", "", seq), reason)
        self.current.reason = reason  # given whole: its own sentence
        return self.current

    def incomplete(self, reason: str, cause: str | None) -> Status:
        """Finalise the run as ``incomplete`` for `reason`: its end never came, so no verdict
        on what it showed (code ``no_end``; it is not learned from)."""
        status = self.current
        status.status, status.final, status.cause = INCOMPLETE, True, cause
        status.reason = status.details = reason
        status.code = NO_END
        return status

    def close(self, seq: int) -> None:
        """Judge the run as ended after event `seq` (its end event, or its last one)."""
        if self.status is None or self.current.final:
            return
        lines = self.builder.previous_lines
        if self.history and lines is not None and not self.history[-1].ends \
                and self.outputs.answered(self.model) \
                and at_an_end_place(self.model, Fingerprint(lines)):
            self.history[-1] = self.history[-1]._replace(ends=True)  # answered after it
            self._advance(list(self.model.accepting), seq)
        if self.model.effects is not None:
            self._converse(None, seq)
            return
        wrong = self.outputs.wrong(self.model)
        last = self.history[-1].seq if self.history else seq
        if self.current.status == PASSED and wrong is None \
                and (kept := self.removals.missing(self.model.required_removals)):
            # the most precise sign of what the edits of a run that got that far missed
            path, line = kept[0]
            self._fail("agent_error", Reason(KEPT_LINE, f"{quoted(line.strip(), 4)} removed from "
                                             f"{path}", "its diffs showed it kept", last),
                       describe(kept), seq)
            return
        sign = self.signs.sign(self.model) if wrong is None else None
        if sign is not None and sign.cause is not None:
            self._fail(sign.cause, Reason(sign.code, sign.expected, sign.shown, last),
                       sign.reason, seq)
            return
        if self.current.status == PASSED and wrong is None and sign is None:
            self.current.final = True
            self.current.warnings = self._route_warnings()
            return
        if wrong is not None:
            sign = Sign(f"the agent called {wrong[0]}:{wrong[1]}; every successful run called "
                        f"it with '{wrong[2]}'", None, f"the answer '{wrong[2]}'",
                        f"the agent answered '{wrong[1]}'", WRONG_OUTPUT)
        call = wrong[0] if wrong is not None else ""
        details, cause, why = explain_failure(self.model, self.history, self.position,
                                              list(self.matched_at), sign,
                                              self.outputs.outputs_shown.get(call, False),
                                              self.outputs.expected_shown.get(call, False))
        if not self.current.missing and not self._accepted():
            self.current.missing = [" or ".join(self.model.name(s) for s in self.model.accepting)]
        self._fail(cause, why, details, seq)

    def tick(self, now: float) -> Status | None:
        """Fail the run if a learned deadline has passed at time `now` (the stream's timer:
        :func:`~trustlayer.judge.deadlines.overdue`)."""
        if self.status is None or self.status.final or self.status.status == PASSED \
                or self.start_ts is None:
            return self.status
        late = overdue(self.model, self.history, self.position, self.start_ts, now)
        if late is not None:
            self._fail("product_bug", *late)
        return self.status


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
