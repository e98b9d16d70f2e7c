"""Canonical, comparable lines of an observation, with the obviously volatile tokens masked.

Every state becomes a set of short lines, each prefixed by where it came from:
``T|`` window title, ``U|`` URL path, ``X|`` visible text, ``A|`` accessibility tree,
``F|`` code-snapshot facts. Fixed masks cover only what is volatile in any application
(clock times, dates, relative ages, durations, measurements to six decimal places or more,
ports, UUIDs, hex ids, random temporary names, the rows of a progress bar); numbers and
names are kept, because what varies in a task is *learned* from its successful runs (see
:mod:`trustlayer.observe.templates`).
"""
from __future__ import annotations

import json
import re
from collections.abc import Iterable
from functools import lru_cache, partial
from itertools import filterfalse, islice, repeat
from typing import Any, cast
from urllib.parse import urlsplit

MASKS: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (re.compile(p, re.IGNORECASE), r) for p, r in (
    (r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b", "<uuid>"),
    (r"\b\d{4}-\d{2}-\d{2}(?:[T ]\d{1,2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?)?",
     "<date>"),
    (r"\b\d{1,2}/\d{1,2}/\d{2,4}\b", "<date>"),
    (r"\b(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)[a-z]*\.? +\d{1,2}(?:,? +\d{4})?"
     r"(?: +\d{1,2}:\d{2})?", "<date>"),
    (r"\b\d{1,2}:\d{2}(?::\d{2})?(?:\.\d+)?(?: ?[ap]m)?\b", "<time>"),
    (r"\b(?:\d+(?:\.\d+)? ?(?:ms|s|sec|secs|seconds?|mins?|minutes?|h|hrs?|hours?|days?"
     r"|weeks?|months?|years?) ago|just now)\b", "<ago>"),
    (r"\b\d+(?:\.\d+)? ?(?:ms|s|sec|secs|seconds)\b", "<dur>"),
    (r"\b\d+\.\d{6,}\b", "<measure>"),  # a float to six places or more is a measurement
    (r"\b(?:0x)?[0-9a-f]{12,}\b", "<hex>"),
    (r"(?<=[:/ ])(?:127\.0\.0\.1|localhost)(?::\d+)?", "<host>"),
    (r"\b(?=(?:[a-z]*\d){2})(?=\d*[a-z])[a-z0-9]{8,}\b", "<rnd>"),
))
TOKEN = re.compile(r"<\*\*?>|<[a-z]+>|\w+|[^\w\s]", re.UNICODE)  # <*>, <**>: template wildcards


_MAY_BE_VOLATILE = re.compile(r"\d|just now|[0-9a-f]{12}", re.IGNORECASE)


@lru_cache(maxsize=1 << 16)  # the lines of one application repeat from event to event
def mask(text: str) -> str:
    """Replace the fixed volatile patterns in `text` and fold white space.

    >>> mask("Saved 5s ago at 12:30 on 2026-11-30, port http://127.0.0.1:8888/lab")
    'Saved <ago> at <time> on <date>, port http://<host>/lab'
    """
    if _MAY_BE_VOLATILE.search(text):  # every pattern needs a digit or "just now"
        for pattern, replacement in MASKS:
            text = pattern.sub(replacement, text)
    return " ".join(text.split())


PLACE_PREFIXES = ("T|", "U|")  # title and URL lines: where a state is, not what it shows
#: WAI-ARIA roles of a table's parts: their text is data, not what a page says it is
TABLE_ROLES = frozenset(("row", "cell", "gridcell", "columnheader", "rowheader"))


def content_lines(lines: Iterable[str]) -> frozenset[str]:
    """The lines that say what a state shows (its title and URL excluded)."""
    return frozenset(filterfalse(_PLACE.match, lines))


_PLACE = re.compile("|".join(re.escape(prefix) for prefix in PLACE_PREFIXES))


def tokens(line: str) -> tuple[str, ...]:
    """Split a canonical line into words, placeholders and punctuation."""
    return tuple(TOKEN.findall(line))


MAX_JSON_LEAVES = 2000  # a larger document is compared line by line


def _json_leaves(document: Any, path: str = "") -> Iterable[tuple[str, Any]]:
    if isinstance(document, dict):
        for key, value in document.items():
            yield from _json_leaves(value, f"{path}_{key}" if path else str(key))
    elif isinstance(document, list) and document:
        for index, value in enumerate(document):
            yield from _json_leaves(value, f"{path}_{index}" if path else str(index))
    else:
        yield path or "value", document


def _json_lines(text: str) -> list[str] | None:
    """One ``path: value`` line per leaf when `text` is a JSON document (pretty-printed,
    on one line or in a viewer: the same lines), else None."""
    stripped = text.strip()
    if stripped[:1] not in ("{", "["):
        return None
    try:
        leaves = list(islice(_json_leaves(json.loads(stripped)), MAX_JSON_LEAVES + 1))
    except (ValueError, RecursionError):
        return None
    if len(leaves) > MAX_JSON_LEAVES:
        return None
    return [f"{_leaf_name(path)}: {_json_value(value)}" for path, value in leaves]


_NOT_WORD = re.compile(r"\W+")
_JSON_ESCAPED = re.compile(r'[\x00-\x1f\\"]')  # what json.dumps escapes (ensure_ascii=False)


@lru_cache(maxsize=1 << 14)  # the paths of one application's documents repeat
def _leaf_name(path: str) -> str:
    return _NOT_WORD.sub("_", path)


def _json_value(value: Any) -> str:
    """``json.dumps(value, ensure_ascii=False)`` of a leaf, without it for a plain string
    or integer (most leaves).

    >>> [_json_value(v) for v in ("a b", 'say "hi"', 7, True, 0.5, None, [])]
    ['"a b"', '"say \\\\"hi\\\\""', '7', 'true', '0.5', 'null', '[]']
    """
    kind = type(value)
    if kind is str and not _JSON_ESCAPED.search(value):
        return f'"{value}"'
    if kind is int:
        return int.__repr__(value)
    return json.dumps(value, ensure_ascii=False)


def shows(lines: Iterable[str] | None, value: str) -> bool:
    """Whether canonical `lines` show `value` as words or numbers of their own.

    >>> shows({"X|188 rows where cities > 2"}, "188"), shows({"X|188 rows"}, "8")
    (True, False)
    """
    wanted = tokens(mask(value))
    for line in lines or ():
        have = tokens(line.partition("|")[2])
        if wanted and any(have[i:i + len(wanted)] == wanted
                          for i in range(len(have) - len(wanted) + 1)):
            return True
    return False


# terminal control sequences (colours, cursor moves): how a terminal drew the text, not
# what it says, as a theme is for a screen
_TERMINAL_CONTROL = re.compile(
    r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)|[@-Z\\-_])")


# a row of a progress bar, one mark repeated and how far it got ("....... [ 45%]"): how
# many rows and which percentages follow from a count the tool reports anyway
_PROGRESS_ROW = re.compile(
    r"^\s*(?:([^\w\s])\1*\s*\[\s*\d{1,3}\s*%\s*\]|([^\w\s])\2{7,})\s*$")
PROGRESS = "<progress>"


def text_lines(text: str | None, prefix: str) -> set[str]:
    """Non-empty masked lines of a block of text (of a JSON document: one per leaf),
    without terminal control sequences, every row of a progress bar as one line.

    >>> sorted(text_lines("\x1b[32m3 passed\x1b[0m in 0.5s", "X"))
    ['X|3 passed in <dur>']
    >>> sorted(text_lines("........ [ 45%]\\n.....F.... [ 90%]\\n... [100%]\\n..........", "X"))
    ['X|.....F.... [ 90%]', 'X|<progress>']
    """
    if not text:
        return set()
    if "\x1b" in text:
        text = _TERMINAL_CONTROL.sub("", text)
    raw_lines = _json_lines(text) or text.splitlines()
    lines = set(map(_text_line, raw_lines, repeat(prefix, len(raw_lines))))
    lines.discard(None)
    return cast("set[str]", lines)  # None discarded: one set, no second pass


@lru_cache(maxsize=1 << 16)  # the lines of one application repeat from event to event
def _text_line(raw: str, prefix: str) -> str | None:
    masked = mask(_PROGRESS_ROW.sub(PROGRESS, raw))
    return f"{prefix}|{masked}" if masked else None


_INLINE_VALUE = re.compile(r"""^(\s*- .*?["'\]]):\s+(.+)$""")


def _yaml_node_lines(raw: str, inline_text: bool) -> tuple[str, ...]:
    raw = raw.rstrip().removesuffix(":")  # a trailing colon only says "has children"
    match = _INLINE_VALUE.match(raw)
    parts = [raw] if not match else [match.group(1)] + ([match.group(2)] * inline_text)
    return tuple(f"A|{masked}" for part in parts if (masked := mask(part)))


# one memo of a tree's lines per `inline_text`: a memo of a single text is keyed by the
# text itself, where one of two arguments makes and hashes a tuple for every line of a tree
_NODE_LINES = {inline: lru_cache(maxsize=1 << 16)(partial(_yaml_node_lines, inline_text=inline))
               for inline in (False, True)}


def a11y_lines(a11y: Any, inline_text: bool = True) -> set[str]:
    """Lines of an accessibility tree given as a YAML-like string or nested JSON.

    A YAML node's inline text (``- listitem "a.txt": a.txt 5s ago``) is text already in
    the state's ``text`` when it has one: then it is dropped (``inline_text=False``),
    else it becomes a line of its own.
    """
    if a11y is None:
        return set()
    if isinstance(a11y, str):
        raws = a11y.splitlines()
        return set().union(*map(_NODE_LINES[inline_text], raws)) \
            - {"A|-", "A|- :"}
    lines = set()

    def walk(node: Any) -> None:
        if isinstance(node, list):
            for child in node:
                walk(child)
        elif isinstance(node, dict):
            role, name = node.get("role", ""), node.get("name", "")
            if role or name:
                lines.add(f"A|{mask(f'{role} {name}'.strip())}")
            walk(node.get("children", []))
    walk(a11y)
    return lines


def url_line(url: str | None) -> set[str]:
    """The URL without scheme, host and query: the part that names the page."""
    if not url:
        return set()
    parts = urlsplit(url)
    return {f"U|{mask(parts.path or '/')}"} if parts.scheme else {f"U|{mask(url)}"}


def file_facts(files: dict[str, str] | None, baseline: dict[str, str] | None) -> set[str]:
    """Facts of a code snapshot: which files exist, their content, and whether each
    differs from the run's first snapshot (`baseline`). A file the run created is
    ``changed`` like one it edited: either way it is the run's work (a regression test
    in a new file or in an existing one); its ``exists`` fact tells that it is new.

    >>> sorted(file_facts({"a.py": "aa", "b.py": "b2"}, {"a.py": "aa", "c.py": "cc"}))
    ['F|changed b.py', 'F|content a.py aa', 'F|content b.py b2', 'F|deleted c.py', \
'F|exists a.py', 'F|exists b.py', 'F|unchanged a.py']
    """
    if files is None:
        return set()
    baseline = baseline or {}
    facts: set[str] = set()
    for path, digest in files.items():
        facts.update(_file_lines(path, digest, "unchanged" if baseline.get(path) == digest
                                 else "changed"))
    facts.update(f"F|deleted {path}" for path in baseline if path not in files)
    return facts


#: the words a file fact's body starts with (``F|exists a.py``)
FACT_KINDS = ("exists ", "content ", "unchanged ", "changed ", "deleted ")


@lru_cache(maxsize=1 << 14)  # a snapshot's files mostly repeat from state to state
def _file_lines(path: str, digest: str, status: str) -> tuple[str, str, str]:
    return f"F|exists {path}", f"F|content {path} {digest[:16]}", f"F|{status} {path}"
