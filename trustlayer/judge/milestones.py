"""Where a run is among its model's milestones: which it reached and at which event, the
early warnings (a state seen before the milestone that dominates it), and whether it
passed. A part of :class:`~trustlayer.judge.matcher.Matcher`, kept apart so the feeding of
events and the bookkeeping of milestones each read on their own."""
from __future__ import annotations

from trustlayer.judge.history import Observed
from trustlayer.judge.reasons import MILESTONES_REACHED, passed_sentence, quoted
from trustlayer.judge.status import AT_RISK, PASSED, RUNNING, Status
from trustlayer.model import Model


class MilestoneProgress:
    """The milestone bookkeeping of a matcher; its attributes are set by the matcher's
    constructor."""

    model: Model
    #: the index in ``model.essential`` of the next milestone to reach
    position: int
    #: the event (seq) each milestone reached was reached at
    matched_at: dict[str, int]
    #: one row per state the run showed
    history: list[Observed]
    #: the run's status after the last event fed (None before the first)
    status: Status | None
    #: (position, milestones reached) when the status last listed them
    _counted: tuple[int, int] | None = None
    #: at that position, whether only milestones runs may skip were left
    _done: bool = False

    @property
    def current(self) -> Status:
        """The run's status: made by :meth:`feed` from the first event, before anything else."""
        if self.status is None:
            raise RuntimeError("no event of the run was fed yet")
        return self.status

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
        essential, soft = self.model.essential, self.model.soft
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
        total = len(essential)
        counted = (self.position, len(self.matched_at))
        if counted != self._counted:  # the milestones reached: not redone at every state
            self._counted = counted
            self.current.matched = [self.model.name(s) for s in essential
                                    if s in self.matched_at]
            self.current.missing = [self.model.name(s) for s in essential[self.position:]
                                    if s not in self.model.soft]
            self.current.coverage = round(len(self.matched_at) / total, 4) if total else 1.0
            soft = self.model.soft
            self._done = self.position >= total \
                or all(s in soft for s in essential[self.position:])
        if self._done and self._accepted():
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
