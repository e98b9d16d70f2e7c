"""A verdict's reason in three forms: a *code* that code matches on, one sentence a person
can act on (``Failed at step 14: expected 'Rename file'; the screen showed 'Permission
denied' instead (product fault).``), and the decision path behind it (the *details*).

The sentence names the step (the event ``seq`` the report shows), what successful runs
showed or did there, what the run showed instead, and who is to blame; it holds at most
:data:`MAX_WORDS` words, names of states cut to :data:`NAME_WORDS`.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

#: Codes of the reasons a run fails (and the one it passes), carried on every verdict.
MISSING_MILESTONE = "missing_milestone"  # an essential milestone never reached
UNACCEPTED_END = "unaccepted_end"  # every milestone, but not ending where successful runs end
NEGATIVE_MILESTONE = "negative_milestone"  # a state learned from failed runs appeared
FILES_MOVED = "files_moved"  # the files changed with no action of the agent
FAILURE_SIGN = "failure_sign"  # a sign of failure (trustlayer.judge.signs)
SELF_REPORT_FAILURE = "self_report_failure"  # the agent reported that it failed
WRONG_OUTPUT = "wrong_output"  # a required answer given another value
KEPT_LINE = "kept_line"  # a line every successful run removed was kept
DEADLINE = "deadline"  # a learned deadline passed (the stream's timer)
UNJUDGEABLE = "unjudgeable"  # the run's stream, not what it showed, decided (faults)
NO_END = "no_end"  # the stream finalised the run without its end event (incomplete)
EXTRA_EFFECT = "extra_effect"  # a change no successful run made, or made with other values
MISSING_EFFECT = "missing_effect"  # a change every successful run made, not made
UNTOLD_FACT = "untold_fact"  # what every successful run told the person, never told
MILESTONES_REACHED = "milestones_reached"  # the run passed

MAX_WORDS = 25
#: What a verdict's coverage counts, for a person (the README and ``--help`` say it too).
COVERAGE = ("coverage: the share of the task's milestones the run reached in order, counting "
            "the interruptions some successful runs skip (a dialog that may not appear); a run "
            "passes under 100% when only those are missing, and fails at 100% when something "
            "went wrong after them (an error shown, a wrong answer, a wrong end)")
NAME_WORDS = 6
CAUSE_WORDS = {"product_bug": "product fault", "agent_error": "agent error"}


def quoted(name: str, words: int = NAME_WORDS) -> str:
    """`name` in quotes, cut to `words` words.

    >>> quoted("untitled.txt"), quoted("a b c d e f g h", 3)
    ("'untitled.txt'", "'a b c…'")
    """
    parts = name.split()
    return f"'{' '.join(parts[:words])}…'" if len(parts) > words else f"'{name}'"


def listed(words: Sequence[str], most: int = 3) -> str:
    """Words a run showed that no successful run showed, quoted together."""
    return quoted(" ".join(words[:most]), most)


@dataclass(frozen=True)
class Reason:
    """Why a run failed, for a person: at event `seq`, successful runs showed or did
    `expected`; the run showed `shown` instead (a clause: ``the screen showed 'Error'``),
    after the agent's `action` when it matters (``the agent clicked "Save"``)."""

    code: str
    expected: str
    shown: str
    seq: int | None = None
    action: str | None = None

    def sentence(self, cause: str | None) -> str:
        """The one sentence, at most :data:`MAX_WORDS` words: the action left out, then
        the end of `shown` cut, when it would be longer.

        >>> why = Reason(MISSING_MILESTONE, "'Rename file'",
        ...              "the screen showed 'Permission denied'", 14)
        >>> print(why.sentence("product_bug"))  # doctest: +NORMALIZE_WHITESPACE
        Failed at step 14: expected 'Rename file'; the screen showed 'Permission denied'
        instead (product fault).
        """
        where = f"at step {self.seq}" if self.seq is not None else "at the end"
        blame = f" ({CAUSE_WORDS.get(cause, cause.replace('_', ' '))})" if cause else ""
        head = f"Failed {where}: expected {self.expected};"
        room = MAX_WORDS - len(head.split()) - len(blame.split()) - 1  # 1: "instead"
        shown = f"{self.action} and {self.shown}" if self.action else self.shown
        words = shown.split() if len(shown.split()) <= room else self.shown.split()
        if len(words) > room:
            words = words[:max(room, 4)]
            kept = " ".join(words)
            opened = kept.count(" '") > kept.count("' ") + kept.endswith("'")  # a quote cut
            words[-1] = words[-1].rstrip(",;:") + ("…'" if opened else "…")
        return f"{head} {' '.join(words)} instead{blame}."


def passed_sentence(reached: int, total: int) -> str:
    """The reason of a run that passed, consistent with its coverage (:data:`COVERAGE`):
    the milestones it did not reach are interruptions some successful runs skip too.

    >>> print(passed_sentence(3, 4))  # doctest: +NORMALIZE_WHITESPACE
    Passed: reached 3 of 4 milestones, all it needs (the other is an interruption some
    successful runs skip too), and ended where successful runs end.
    """
    if reached >= total:
        return f"Passed: reached all {total} milestones and ended where successful runs end."
    other = "the other is an interruption" if total - reached == 1 else \
        f"the other {total - reached} are interruptions"
    return (f"Passed: reached {reached} of {total} milestones, all it needs ({other} some "
            "successful runs skip too), and ended where successful runs end.")


def conversation_passed(changes: int, facts: int) -> str:
    """The reason of a conversation that passed.

    >>> print(conversation_passed(2, 0))
    Passed: made the 2 changes every successful run made, and no other.
    >>> print(conversation_passed(0, 1))
    Passed: made no change successful runs did not make, and told the 1 fact they all told.
    """
    told = f", and told the {facts} fact{'s' * (facts != 1)} they all told" if facts else ""
    if changes:
        return f"Passed: made the {changes} change{'s' * (changes != 1)} every successful run " \
               f"made, and no other{told}."
    return f"Passed: made no change successful runs did not make{told}."
