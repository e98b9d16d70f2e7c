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

from dataclasses import asdict
from typing import Any

from trustlayer.compare.equivalence import (at_an_end_place, ends_like_success, judge,
                                            like_in_shape, typed_tokens)
from trustlayer.compare.index import index_of
from trustlayer.compare.llm import LLMJudge
from trustlayer.judge.cause import explain_failure
from trustlayer.judge.faults import feed_checked
from trustlayer.judge.deadlines import overdue
from trustlayer.judge.history import Observed, row_of
from trustlayer.judge.reasons import (FILES_MOVED, KEPT_LINE, MILESTONES_REACHED,
                                      NEGATIVE_MILESTONE, UNJUDGEABLE, WRONG_OUTPUT, Reason,
                                      passed_sentence, quoted)
from trustlayer.judge.signs import FailureWatch, Sign
from trustlayer.judge.status import AT_RISK, FAILED, PASSED, RUNNING, Status
from trustlayer.learn.evidence import output_call
from trustlayer.model import Model
from trustlayer.observe.canonical import shows
from trustlayer.observe.context import file_facts
from trustlayer.observe.edits import RemovalLedger, changed_in_facts, describe
from trustlayer.observe.fingerprints import Fingerprint
from trustlayer.observe.steps import Step, StepBuilder, action_signatures
from trustlayer.observe.traces import Action, Event, Observation, Run


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
        self.outputs: dict[str, str] = {}  # required call -> the last value the agent gave
        self.outputs_shown: dict[str, bool] = {}  # ... and whether the screen showed it
        self.expected_shown: dict[str, bool] = {}  # ... and the value successful runs gave
        self.removals = RemovalLedger(model.required_removals)
        self.signs = FailureWatch()
        self.typed: tuple[tuple[str, ...], ...] = ()  # the texts the agent typed, as tokens
        self.reshaped: list[str] = []  # transient milestones met with other counts (each
        # the milestone reached by that step: see _observe)
        self.status: Status | None = None  # the run's status after the last event fed

    @property
    def typed_words(self) -> frozenset[str]:
        """The words of the texts the agent typed: its own choice, no news when shown."""
        return frozenset(t for text in self.typed for t in text if t.isalpha() and len(t) > 2)

    def _llm_for_run(self) -> LLMJudge | None:
        if self.llm is None or not self.model.settings.llm.enabled:
            return None
        if self.status.llm_calls >= self.model.settings.llm.max_calls_per_run:
            return None
        return self.llm

    def _matches(self, step) -> list[str]:
        found = []
        index = index_of(self.model)  # a line the agent's typed text changed is no exact hit
        plausible = index.plausible(step.fingerprint)
        if not plausible and self.typed:
            plausible = index.candidates(step.fingerprint)
        for sid in sorted(plausible):
            llm = self._llm_for_run()
            decision = judge(self.model, step.fingerprint, sid, llm, only_same=True,
                             own_words=self.typed_words, typed=self.typed)
            if decision.evidence.get("llm_called"):
                self.status.llm_calls += 1
            if decision.same:
                found.append(sid)
        return found

    def feed(self, event: Event) -> Status:
        """Take the run's next event (in `seq` order) and return the run's status."""
        if self.status is None:
            self.status = Status(event.run_id, event.task, model_version=self.model.version,
                                missing=[self.model.name(s) for s in self.model.essential])
            self.start_ts = event.ts
        self.status.event_ts = event.ts
        if self.status.final:
            return self.status
        if event.kind == "action" and event.action.value is not None \
                and (call := output_call(event.action)) in self.model.required_outputs:
            self.outputs[call] = event.action.value
            self.outputs_shown[call] = shows(self.builder.previous_lines, event.action.value)
            self.expected_shown[call] = shows(self.builder.previous_lines,
                                              self.model.required_outputs[call])
        before = self.builder.previous_lines
        if event.kind == "action" and event.action.type == "type" and event.action.value:
            # words the agent chose (a description it added) are no news when shown again
            text = typed_tokens(event.action.value)
            if sum(token.isalpha() for token in text) > 1:  # a phrase: no digit found anywhere
                self.typed += (text,)
        step = self.builder.feed(event)
        if step is not None:
            if self.model.required_removals:
                self.removals.observe(event.observation.text,
                                      changed_in_facts(before, step.fingerprint.lines))
            self._observe(step, before, event.observation)
        elif event.kind == "end":
            self.signs.self_report = event.self_report
            self.close(event.seq)
        return self.status

    def _observe(self, step: Step, before: frozenset[str] | None,
                 observation: Observation) -> None:
        ids = self._matches(step)
        negatives = [sid for sid in ids if sid in self.model.negative]
        known = [sid for sid in ids if sid not in self.model.negative]
        upcoming = self._upcoming_transient()
        if upcoming and upcoming not in known and like_in_shape(self.model, step.fingerprint,
                                                                upcoming):
            known.append(upcoming)
            self.reshaped.append(upcoming)
        novel = [word for word in index_of(self.model).novelty(step.fingerprint)
                 if word not in self.typed_words] if not known else []
        # a known state may hold news too (a tool's error beside the usual output)
        news = bool(novel) or bool(known) and bool(self.model.check_files) \
            and bool(index_of(self.model).novelty(step.fingerprint))
        self.signs.observe(self.model, step, before, observation, known, news)
        ends = ends_like_success(self.model, step.fingerprint, known, self.typed_words) \
            or self._answered() and at_an_end_place(self.model, step.fingerprint)
        self.history.append(Observed(step.seq, step.ts, known, action_signatures(step),
                                     novel[:8], ends, step.files_moved))
        if not known:
            self.status.unknown_states += 1
        if self.status.status == FAILED:
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
                self.status.warnings = []
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
                if warning not in self.status.warnings:
                    self.status.warnings.append(warning)

    def _update(self, seq: int) -> None:
        essential = self.model.essential
        self.status.matched = [self.model.name(s) for s in essential if s in self.matched_at]
        self.status.missing = [self.model.name(s) for s in essential[self.position:]
                              if s not in self.model.soft]
        total = len(essential)
        self.status.coverage = round(len(self.matched_at) / total, 4) if total else 1.0
        done = self.position >= total or all(s in self.model.soft for s in essential[self.position:])
        if done and self._accepted():
            self.status.status, self.status.code = PASSED, MILESTONES_REACHED
            self.status.reason = passed_sentence(len(self.matched_at), total)
            self.status.details = (f"every essential milestone reached ({len(self.matched_at)} "
                                   f"of {total}; the others are interruptions runs may skip), "
                                   "and the run ended where successful runs end")
            if self.status.detected_at_seq is None:
                self.status.detected_at_seq = seq
        else:
            self.status.status = AT_RISK if self.status.warnings else RUNNING

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

    def _answered(self) -> bool:
        """Whether the run made every required output call with the value every successful
        run gave it."""
        required = self.model.required_outputs
        return bool(required) and all(self.outputs.get(call) == value
                                      for call, value in required.items())

    def _wrong_output(self) -> tuple[str, str, str] | None:
        """A tool call made with another value than every successful run gave it."""
        for call, value in self.model.required_outputs.items():
            given = self.outputs.get(call)
            if given is not None and given != value:
                return call, given, value
        return None

    def _route_warnings(self) -> list[str]:
        return [f"took a route no successful run took: skipped '{self.model.name(sid)}'"
                for sid in self.model.incidental if sid not in self.matched_at] + [
            f"showed '{self.model.name(sid)}' with other counts than every successful run"
            for sid in self.reshaped] + self.signs.notes(self.model)

    def _fail(self, cause: str | None, why: Reason, details: str, seq: int | None = None) -> None:
        """Fail the run for good at event `seq` (else where `why` found it, the short reason)."""
        self.status.status, self.status.cause, self.status.code = FAILED, cause, why.code
        self.status.reason, self.status.details = why.sentence(cause), details
        self.status.detected_at_seq, self.status.final = why.seq if seq is None else seq, True

    def fail(self, seq: int, reason: str, cause: str | None, code: str = UNJUDGEABLE) -> Status:
        """Fail the run for good at event `seq`, for a `reason` outside what it showed (its
        own details; e.g. an event that cannot be judged: :mod:`trustlayer.judge.faults`),
        after the run's first event was fed (:meth:`feed` makes its status first)."""
        self._fail(cause, Reason(code, "", "", seq), reason)
        self.status.reason = reason  # given whole: its own sentence
        return self.status

    def close(self, seq: int) -> None:
        """Judge the run as ended after event `seq` (its end event, or its last one)."""
        if self.status is None or self.status.final:
            return
        if self.history and not self.history[-1].ends and self._answered() \
                and at_an_end_place(self.model, Fingerprint(self.builder.previous_lines)):
            self.history[-1] = self.history[-1]._replace(ends=True)  # answered after it
            self._advance(list(self.model.accepting), seq)
        wrong = self._wrong_output()
        last = self.history[-1].seq if self.history else seq
        if self.status.status == PASSED and wrong is None \
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
        if self.status.status == PASSED and wrong is None and sign is None:
            self.status.final = True
            self.status.warnings = self._route_warnings()
            return
        if wrong is not None:
            sign = Sign(f"the agent called {wrong[0]}:{wrong[1]}; every successful run called "
                        f"it with '{wrong[2]}'", None, f"the answer '{wrong[2]}'",
                        f"the agent answered '{wrong[1]}'", WRONG_OUTPUT)
        call = wrong[0] if wrong is not None else None
        details, cause, why = explain_failure(self.model, self.history, self.position,
                                              list(self.matched_at), sign,
                                              self.outputs_shown.get(call, False),
                                              self.expected_shown.get(call, False))
        if not self.status.missing and not self._accepted():
            self.status.missing = [" or ".join(self.model.name(s) for s in self.model.accepting)]
        self._fail(cause, why, details, seq)

    def tick(self, now: float) -> Status | None:
        """Fail the run if a learned deadline has passed at time `now` (the stream's timer:
        :func:`~trustlayer.judge.deadlines.overdue`)."""
        if self.status is None or self.status.final or self.status.status == PASSED:
            return self.status
        late = overdue(self.model, self.history, self.position, self.start_ts, now)
        if late is not None:
            self._fail("product_bug", *late)
        return self.status

    def snapshot(self) -> dict[str, Any]:
        """What the matcher needs to resume, JSON-serialisable (see :meth:`restore`): the
        history as rows of :data:`~trustlayer.judge.history.HISTORY_FIELDS`, and of the
        previous state's lines only those the next step reads (its file facts; every line
        when the model requires outputs, whose values are looked up on that screen)."""
        previous = self.builder.previous_lines
        if previous is not None and not self.model.required_outputs:
            previous = file_facts(previous)
        return {"position": self.position,
                "history": [list(entry) for entry in self.history],
                "matched_at": self.matched_at, "start_ts": self.start_ts,
                "outputs": self.outputs, "outputs_shown": self.outputs_shown,
                "expected_shown": self.expected_shown,
                "removed": {path: sorted(lines) for path, lines in self.removals.removed.items()},
                "unseen": sorted(self.removals.unseen), "reshaped": self.reshaped,
                "signs": self.signs.to_json(), "typed": [list(text) for text in self.typed],
                "holders": {path: {line: sorted(held) for line, held in holders.items()}
                            for path, holders in self.removals.holders.items()},
                "baseline_files": self.builder.baseline_files,
                "pending": [asdict(a) for a in self.builder.pending],
                "previous_lines": None if previous is None else sorted(previous),
                "status": None if self.status is None else  # asdict() deep-copies: slow
                {name: list(value) if isinstance(value, list) else value
                 for name, value in vars(self.status).items()}}

    @classmethod
    def restore(cls, model: Model, data: dict[str, Any], llm: LLMJudge | None = None) -> "Matcher":
        """Rebuild a matcher from :meth:`snapshot`."""
        matcher = cls(model, llm)
        matcher.position = data["position"]
        matcher.history = [row_of(row) for row in data["history"]]
        matcher.matched_at, matcher.start_ts = dict(data["matched_at"]), data["start_ts"]
        matcher.outputs = dict(data.get("outputs", {}))
        matcher.outputs_shown = dict(data.get("outputs_shown", {}))
        matcher.expected_shown = dict(data.get("expected_shown", {}))
        # (records written before these were kept hold none)
        matcher.removals.removed = {path: set(lines)
                                    for path, lines in data.get("removed", {}).items()}
        matcher.removals.unseen = set(data.get("unseen", ()))
        matcher.removals.holders = {path: {line: set(held) for line, held in holders.items()}
                                    for path, holders in data.get("holders", {}).items()}
        matcher.reshaped = list(data.get("reshaped", ()))
        matcher.signs = FailureWatch.from_json(data.get("signs"))
        matcher.typed = tuple(tuple(text) for text in data.get("typed", ()))
        matcher.builder.baseline_files = data["baseline_files"]
        matcher.builder.pending = [Action(**a) for a in data["pending"]]
        previous = data.get("previous_lines")
        matcher.builder.previous_lines = None if previous is None else frozenset(previous)
        matcher.status = None if data["status"] is None else Status(**data["status"])
        return matcher


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
    return judged(model, run, llm).status
