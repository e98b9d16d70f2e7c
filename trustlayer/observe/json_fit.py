"""Whether parsed JSON is fit to read on: not nested too deep, only Unicode text, only
string keys (a trace event, a model file)."""
from __future__ import annotations

from collections.abc import Iterable
from typing import Any, NamedTuple

from trustlayer.errors import TOO_DEEP, WRONG_SCHEMA

MAX_NESTING = 200  # JSON depth of an event (an accessibility tree nests, but not this deep)


class Unfit(NamedTuple):
    """Why JSON is unfit: a :data:`~trustlayer.errors.TRACE_CODES` code and the message."""

    code: str
    message: str


def json_problem(obj: Any, max_depth: int = MAX_NESTING) -> Unfit | None:
    """What makes parsed JSON unfit to read on, or None: nesting deeper than `max_depth`,
    a string with a lone UTF-16 surrogate (not Unicode, cannot be written as UTF-8), an
    object key that is not a string (a dict built in code). The first found in a
    depth-first walk, the last member of a container first.

    >>> json_problem({"a": ["\\ud800"]}).message
    "string '\\\\ud800' holds a lone surrogate: not Unicode text"
    >>> json_problem([[[]]], max_depth=2)
    Unfit(code='too_deep', message='JSON nested deeper than 2 levels')
    """
    return _json_walk(obj, 1, max_depth)


def few_brackets(text: bytes, max_depth: int = MAX_NESTING) -> bool:
    """Whether JSON `text` holds too few brackets to nest its values deeper than
    `max_depth` (:func:`json_problem`'s limit): its containers, and a scalar one level
    below the innermost, count a level each. Brackets in strings count too.

    >>> few_brackets(b'[[1]]', max_depth=3), few_brackets(b'[[[1]]]', max_depth=3)
    (True, False)
    """
    return text.count(b"[") + text.count(b"{") < max_depth


def _json_walk(value: Any, depth: int, max_depth: int) -> Unfit | None:
    if depth > max_depth:
        return Unfit(TOO_DEEP, f"JSON nested deeper than {max_depth} levels")
    if isinstance(value, dict):
        for key in value:
            if not isinstance(key, str):
                return Unfit(WRONG_SCHEMA, f"object key {key!r} is not a string")
        members: Iterable[tuple[str | None, Any]] = reversed(value.items())
    elif isinstance(value, list):
        members = ((None, item) for item in reversed(value))
    else:
        return _lone_surrogate(value)
    if value and depth == max_depth:  # its members are one level too deep
        return Unfit(TOO_DEEP, f"JSON nested deeper than {max_depth} levels")
    for key, item in members:  # (a scalar is looked at only if it may be at fault)
        if isinstance(item, (dict, list)):
            problem = _json_walk(item, depth + 1, max_depth)
        else:
            problem = _lone_surrogate(item) if isinstance(item, str) and not item.isascii() \
                else None
        if problem is None and key is not None and not key.isascii():
            problem = _lone_surrogate(key)
        if problem:
            return problem
    return None


def _lone_surrogate(value: Any) -> Unfit | None:
    if isinstance(value, str) and not value.isascii():
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return Unfit(WRONG_SCHEMA,
                         f"string {value[:40]!a} holds a lone surrogate: not Unicode text")
    return None
