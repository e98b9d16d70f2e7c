"""A conversation read as what the agent changed and what it told a person.

In the format's *Conversations* (docs/TRACE_FORMAT.md) the person's messages are states,
the agent's replies ``message`` actions and its tool calls ``tool`` actions, each followed
by a state holding the tool's answer. Of a tool-calling agent's run, what decides is
mostly its **effects**: the calls that change something outside the agent (``read_only``
not true: a tool of unknown effect may change things), with their arguments, and that the
tool did not refuse. Reads vary with what the agent already knew, its words with the
person; neither is read here.

Arguments are compared by value (:func:`arg_view`), except those that are the agent's own
prose (:data:`PROSE_WORDS` words or more: a summary, a note), which vary from run to run
the way its messages do. A tool's answer that starts with the word *error* (the convention
of tool-calling frameworks for a call the tool refused) means the call changed nothing.
"""
from __future__ import annotations

import json
import re
from collections.abc import Iterator, Sequence
from typing import Any, NamedTuple

from trustlayer.observe.trace_events import Action, Event, Run

#: A string argument of this many words or more is the agent's own wording, not a value.
PROSE_WORDS = 4
#: A tool's answer refusing the call (``Error: payment method not found``).
_REFUSAL = re.compile(r"\s*(?:error|exception)\b", re.IGNORECASE)
#: A token that carries a digit: a count, an amount, a date, a code (``4``, ``$1,200.50``).
_FACT = re.compile(r"[\w.$,-]*\d[\w.$,-]*")
_NUMBER = re.compile(r"\d+(?:\.\d+)?")
_WORD = re.compile(r"(?<![\w-])[A-Za-z]{2,}(?![\w-])")  # a word, not part of an identifier
ANSWER_CHARS = 80  # of a refusal quoted in a reason

View = tuple[tuple[str, str], ...]  # a call's arguments compared by value: (key, JSON) pairs


class Call(NamedTuple):
    """A call that may change something: its tool, its arguments by value (:func:`arg_view`),
    the event it was made at, whether the tool refused it, its answer (shortened) and the
    words of its answer (:func:`answer_words`)."""

    tool: str
    view: View
    seq: int
    refused: bool = False
    answer: str = ""
    words: frozenset[str] = frozenset()


def is_conversation(run: Run) -> bool:
    """Whether the agent of `run` spoke to a person (a ``message`` action)."""
    return any(e.action is not None and e.action.type == "message" for e in run.events)


def may_change(action: Action) -> bool:
    """Whether `action` is a call that may change something outside the agent."""
    return action.type in ("tool", "api") and action.read_only is not True


def _normal(value: Any) -> Any:
    """`value` with what does not change its meaning folded: integral floats as integers,
    strings stripped."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str):
        return value.strip()
    if isinstance(value, list):
        return [_normal(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _normal(v) for k, v in value.items()}
    return value


def is_prose(value: Any) -> bool:
    """Whether `value` is the agent's own wording (:data:`PROSE_WORDS` words or more).

    >>> is_prose("User wants to cancel reservation X1"), is_prose("Amelia Rossi")
    (True, False)
    """
    return isinstance(value, str) and len(value.split()) >= PROSE_WORDS


def arg_view(action: Action) -> View:
    """The arguments of `action` compared by value: sorted ``(key, JSON)`` pairs, prose
    left out (its ``value`` stands for its arguments when it has none).

    >>> arg_view(Action("tool", "send", args={"amount": 50.0, "note": "sorry for the delay"}))
    (('amount', '50'),)
    """
    args = action.args if action.args is not None else \
        {} if action.value is None else {"value": action.value}
    return tuple(sorted((str(key), json.dumps(_normal(value), sort_keys=True,
                                              ensure_ascii=False))
                        for key, value in args.items() if not is_prose(value)))


def refused(answer: str | None) -> bool:
    """Whether a tool's answer refuses its call.

    >>> refused("Error: payment method not found"), refused('{"status": "ok"}')
    (True, False)
    """
    return bool(answer) and bool(_REFUSAL.match(answer or ""))


def facts(text: str | None) -> set[str]:
    """The tokens of `text` that carry a digit, as a person would repeat them: numbers
    without currency signs, thousands separators or a zero fraction.

    >>> sorted(facts("You can take 4 bags; each extra one is $50.00, booking HAT005."))
    ['4', '50', 'HAT005']
    """
    found = set()
    for token in _FACT.findall(text or ""):
        token = token.strip(".,-").lstrip("$")
        plain = token.replace(",", "")
        if _NUMBER.fullmatch(plain):
            token = str(int(float(plain))) if float(plain).is_integer() else plain
        if token:
            found.add(token)
    return found


def said(event: Event) -> str | None:
    """What the agent told a person at `event` (a ``message`` action), else None."""
    action = event.action
    return action.value if action is not None and action.type == "message" else None


class CallWatch:
    """The change of a conversation awaiting its answer, read one event at a time: the
    call is complete, refused or not, with the event after it."""

    def __init__(self, pending: Call | None = None):
        self.pending = pending

    def feed(self, event: Event) -> Call | None:
        """Take the run's next event; the call it completes, if any."""
        done = None
        if self.pending is not None:
            answer = event.observation.text if event.observation is not None else None
            done, self.pending = answer_call(self.pending, answer), None
        if event.action is not None and may_change(event.action):
            self.pending = Call(event.action.target or "", arg_view(event.action), event.seq)
        return done

    def close(self) -> Call | None:
        """The call still awaiting its answer when the run ended (it counts as made)."""
        done, self.pending = self.pending, None
        return done


def effect_calls(events: Sequence[Event]) -> Iterator[Call]:
    """The calls of `events` that may change something, each with whether the tool
    refused it (read from the state after it; a call with no answer counts as made)."""
    watch = CallWatch()
    for event in events:
        if (call := watch.feed(event)) is not None:
            yield call
    if (call := watch.close()) is not None:
        yield call


def answer_call(call: Call, answer: str | None) -> Call:
    """`call` with the tool's `answer` (the text of the state after it, None when the next
    event is no state) read for a refusal."""
    return call._replace(refused=refused(answer), words=answer_words(answer),
                         answer=" ".join((answer or "").split())[:ANSWER_CHARS])


def answer_words(answer: str | None) -> frozenset[str]:
    """The words of a tool's answer, in lower case (no numbers, no identifiers with digits:
    those vary from run to run).

    >>> sorted(answer_words('{"status": "ok", "id": "c-3221"} Permission denied'))
    ['denied', 'id', 'ok', 'permission', 'status']
    """
    return frozenset(word.lower() for word in _WORD.findall(answer or ""))


def new_facts(run: Run) -> set[str]:
    """The facts the agent of `run` told a person that neither the person, nor a tool's
    answer, nor its own calls had given it before: what it worked out (a total)."""
    known: set[str] = set()
    told: set[str] = set()
    for event in run.events:
        if (text := said(event)) is not None:
            told |= facts(text) - known
        elif event.observation is not None:
            known |= facts(event.observation.text)
        elif event.action is not None:
            known |= facts(json.dumps(event.action.args)) | facts(event.action.value)
    return told
