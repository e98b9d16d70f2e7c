"""One run's signs of failure, watched step by step (see
:mod:`trustlayer.learn.failure_signs` for what the model learned of them).

A sign of failure is never outweighed by milestones reached: a run that shows one when it
ends fails, however far it got. The signs:

* its last state, where successful runs ended, still shows a line their work made go;
* its last answer of a check still shows what successful runs went on to overcome;
* it changed the files every successful run changed and never checked its work after;
* it took lines out of a file successful runs only ever added to, or that none of them
  changed, or its edits never added a name every successful run's edits added;
* its page received an HTTP error no successful run received, never answered well since;
* it ended without showing, verbatim, text every successful run typed and showed at its end;
* the agent itself reported failure (a report of success is no evidence of success).
"""
from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field, fields
from typing import Any, NamedTuple

from trustlayer.judge.reasons import FAILURE_SIGN, SELF_REPORT_FAILURE, quoted
from trustlayer.model import Model
from trustlayer.observe.edits import WordLedger, changed_in_facts, taken_out
from trustlayer.observe.shared import few_lines, shared_memo, short_texts
from trustlayer.observe.steps import Step, in_words
from trustlayer.observe.templates import shape_of
from trustlayer.observe.trace_events import Observation

MAX_QUOTED = 60  # characters of a line quoted in a reason
_PLAIN = re.compile(r'^- (?:[a-z]+ )?"(.*)"$')  # an accessibility line: its name
AGENT_ERROR, PRODUCT_BUG = "agent_error", "product_bug"
HTTP_ERROR, SERVER_ERROR = 400, 500  # a 5xx is the server's own failure, a 4xx may be asked for
NO_ROW = -1  # a seq no state has: news whose state a record written before lacks


class Sign(NamedTuple):
    """A sign of failure: the reason, the cause when the sign itself tells it (None: the
    run's steps tell it, :func:`trustlayer.judge.cause.explain_failure`), and for the
    short reason what successful runs showed and what the run showed instead."""

    reason: str
    cause: str | None
    expected: str
    shown: str
    code: str = FAILURE_SIGN
    at: int | None = None  # the seq of the state the sign is about, when it is not the last


def _quote(line: str, words: int | None = None) -> str:
    """A canonical line's text in quotes: cut to :data:`MAX_QUOTED` characters, or with
    `words`, to that many words (for the short reason)."""
    text = line.partition("|")[2].strip()
    if words is not None:  # a person reads the words, not the tree's syntax (- cell "…")
        return quoted(_PLAIN.sub(r"\1", text), words)
    return f"'{text[:MAX_QUOTED]}...'" if len(text) > MAX_QUOTED else f"'{text}'"


@dataclass
class FailureWatch:
    """What one run showed of the signs of failure so far (River-style ``observe``)."""

    still_shown: list[str] = field(default_factory=list)  # gone lines its latest state shows
    unresolved: dict[str, list[str]] = field(default_factory=dict)  # check -> overcome
    # shapes its last answer shows
    changed: list[str] = field(default_factory=list)  # check files it changed
    checked_since: list[str] = field(default_factory=list)  # checks used since that change
    taken_out: list[str] = field(default_factory=list)  # [path, line] of a file successful
    # runs only added to
    words: WordLedger = field(default_factory=WordLedger)  # what its diffs added
    # the first state where the product said something no successful run saw (a tool's
    # error) since the last check's answer, and since the last change of the files (that
    # change's own state included): its seq, the state a reason quotes; None: no news
    report_news_at: int | None = None
    change_news_at: int | None = None
    # "METHOD path" -> the error status no successful run received, not made good since
    http_errors: dict[str, int] = field(default_factory=dict)
    texts_missing: list[str] = field(default_factory=list)  # end texts its latest state lacks
    self_report: str | None = None

    def observe(self, model: Model, step: Step, facts_before: frozenset[str] | None,
                observation: Observation, ids: list[str], news: bool) -> None:
        """Take the run's next step (`facts_before`: the file facts of the state before it;
        `observation`: what it showed, where a tool's diffs, HTTP responses and typed text
        are read; `ids`: the model states it is; `news`: whether it shows words no
        successful run showed)."""
        lines, text, responses = step.fingerprint.content, observation.text, observation.network
        if model.end_texts:
            self.texts_missing = lacking(observation, model.end_texts)
        if news and self.report_news_at is None:
            self.report_news_at = step.seq
        if news and self.change_news_at is None:
            self.change_news_at = step.seq
        for response in responses:
            request = f"{response.method} {response.path}"
            if response.status >= HTTP_ERROR and response.status not in model.statuses:
                self.http_errors[request] = response.status
            else:  # answered again, and well
                self.http_errors.pop(request, None)
        if (model.added_only or model.changed_files) and not self.taken_out:
            self.taken_out = next(([path, removed[0]] for path, removed in taken_out(text).items()
                                   if path in model.added_only
                                   or model.changed_files and path not in model.changed_files),
                                  [])
        if model.gone_lines:
            self.still_shown = sorted(lines & set(model.gone_lines.get(ids[0], ()))) if ids else []
        calls = {action.call for action in step.actions}
        if model.check_files:
            moved = changed_in_facts(facts_before, step.fingerprint.facts)
            if model.required_words:
                self.words.observe(text, moved & model.required_words.keys())
            changed = moved & set(model.check_files)
            if changed:
                self.changed = sorted(set(self.changed) | changed)
                self.checked_since, self.change_news_at = [], step.seq if news else None
            elif used := calls & {*model.checks, *model.some_checks}:
                self.checked_since = sorted(set(self.checked_since) | used)
        for call in calls & model.overcome.keys():
            shapes = _shapes(lines)
            self.unresolved[call] = [shape for shape in model.overcome[call] if shape in shapes]
            self.report_news_at = None  # (a report's own news: the agent's test names)

    def sign(self, model: Model) -> Sign | None:
        """The run's sign of failure, or None when it shows none. What the agent did to
        the code, or left unfixed, is its error unless the product said something no
        successful run saw after it (a write refused: the agent could not go on); what the
        product showed (a line still there, a report of failure) is blamed by the run's
        steps."""
        if self.taken_out:
            path, line = self.taken_out
            kept = "where every successful run only added lines" if path in model.added_only \
                else "which no successful run changed"
            where = f"only lines added to {path}" if path in model.added_only \
                else f"{path} left as it was"
            return Sign(f"it took `{line[:MAX_QUOTED]}` out of {path}, {kept}", AGENT_ERROR,
                        where, f"its diff showed {quoted(line.strip(), 4)} taken out")
        for call, shapes in sorted(self.unresolved.items()):
            if shapes:
                name = call.partition(':')[2] or call
                return Sign(f"its last {name} report still showed "
                            f"{_quote(shapes[0])}, which successful runs went on to fix",
                            PRODUCT_BUG if self.report_news_at is not None else AGENT_ERROR,
                            f"a {name} report without {_quote(shapes[0], 4)}",
                            "its last report still showed it", at=self.report_news_at)
        for path, words in sorted(model.required_words.items()):
            added = self.words.net(path)
            if added is not None and (lacking := [w for w in words if w not in added]):
                return Sign(f"its edits of {path} never added `{lacking[0]}`, which every "
                            "successful run's edits added", AGENT_ERROR,
                            f"edits of {path} adding `{lacking[0]}`",
                            "its diffs showed no such line")
        for request, status in sorted(self.http_errors.items()):
            return Sign(f"the server answered {request} with {status}, which no successful "
                        "run received", PRODUCT_BUG if status >= SERVER_ERROR else None,
                        f"a good answer to {request}", f"the page showed HTTP {status}")
        for missing in self.texts_missing:
            return Sign(f"the run ended without showing '{missing}', which every successful run "
                        "typed and showed at its end", None,
                        f"{quoted(missing, 4)} shown at the end",
                        "the last screen showed no such text")
        if self.changed and model.checks and not set(self.checked_since) & set(model.checks):
            return Sign(f"it changed {self.changed[0]} and never checked its work afterwards; "
                        f"every successful run then used {' or '.join(model.checks)}",
                        PRODUCT_BUG if self.change_news_at is not None else AGENT_ERROR,
                        f"that the agent then {in_words(model.checks[0])}",
                        f"the run showed no check after it changed {self.changed[0]}",
                        at=self.change_news_at)
        if self.still_shown:
            return Sign(f"the run ended still showing {_quote(self.still_shown[0])}, which "
                        "every successful run's work made go", None,
                        f"{_quote(self.still_shown[0], 4)} gone at the end",
                        "the last screen still showed it")
        if self.self_report == "failure":
            return Sign("the agent reported that it failed", None, "the task done",
                        "the agent's own report showed failure", SELF_REPORT_FAILURE)
        return None

    def notes(self, model: Model) -> list[str]:
        """Warnings for a run that passes: it did not check its work after its last change
        where only some successful runs did."""
        if self.changed and not model.checks and model.some_checks and not self.checked_since:
            return [f"it changed {self.changed[-1]} and did not check its work afterwards; "
                    f"some successful runs then used {' or '.join(model.some_checks)}"]
        return []

    def to_json(self) -> dict[str, Any]:
        # not asdict(), which deep-copies every string: a worker snapshots each run it
        # judged at every checkpoint
        data = {name: _copied(getattr(self, name)) for name in _WATCH_FIELDS}
        data["words"] = self.words.to_json()
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any] | None) -> FailureWatch:
        if not data:
            return cls()
        data = dict(data, words=WordLedger.from_json(data["words"]))
        for kept_as_flag, at in (("news_since_report", "report_news_at"),
                                 ("news_since_change", "change_news_at")):
            if data.pop(kept_as_flag, False):  # a record written before the seq was kept
                data[at] = NO_ROW
        return cls(**data)


_WATCH_FIELDS = tuple(f.name for f in fields(FailureWatch))


def _copied(value: Any) -> Any:
    """A watch's field (strings, numbers, and lists and dicts of them or of lists of
    strings) copied as far down as anything in it is changed in place."""
    if isinstance(value, list):
        return list(value)
    if isinstance(value, dict):
        return {key: list(item) if isinstance(item, list) else item
                for key, item in value.items()}
    return value


@shared_memo(256, few_lines)  # a fleet's runs show the same reports (a state's shared lines)
def _shapes(lines: frozenset[str]) -> frozenset[str]:
    return frozenset(map(shape_of, lines))


def lacking(observation: Observation, texts: Sequence[str]) -> list[str]:
    """Those of `texts` that the state's :meth:`~Observation.shown_text` does not hold.

    >>> lacking(Observation(text="saved  hello\\nworld"), ["hello world", "bye"])
    ['bye']
    """
    return list(_lacking(tuple(observation.shown_parts()), tuple(texts)))


@shared_memo(1024, lambda parts, _: short_texts(parts))  # a fleet's runs: the same screens
def _lacking(parts: tuple[str, ...], texts: tuple[str, ...]) -> tuple[str, ...]:
    # a text's words each stand in one part as they are (folding only joins them): a state
    # lacking one is not folded, which is most states and the costly step
    maybe = [text for text in texts
             if all(any(word in part for part in parts) for word in text.split())]
    shown = " ".join(" ".join(parts).split()) if maybe else ""
    return tuple(text for text in texts if text not in maybe or text not in shown)
