"""The lines of a state that may complete its name (:mod:`trustlayer.learn.naming`), most
telling first, written as a training run showed them (``python-slugify``, not the
template's tokens ``python - slugify``), masked and varying values as ``…``.

A heading first (the higher level first: a panel's ``Table of Contents`` before its ``No
Headings``; never the headings of a list's parts, shown together), then a section's title,
then a line few states show; never a control's label nor a table's row or cell, nor a
piece of one (a menu item's shortcut, a row of data in the tree or only in the visible
text say nothing of where the agent is). Lines that are mostly numbers (a cursor position
in a status bar) tell least.
"""
from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from typing import NamedTuple

from trustlayer.model import ModelState
from trustlayer.observe.canonical import PLACE_PREFIXES, TABLE_ROLES, TOKEN, tokens
from trustlayer.observe.templates import REST, WILDCARD, is_exact

MAX_NAME = 70
PREFERENCE = {"X": 0, "A": 1, "F": 2}  # visible text names a state best
_WORD = re.compile(r"[^\W\d_]{3,}")  # a word worth reading in a name
_PLACEHOLDER = re.compile(r"<[a-z]+>|<\*\*?>")
#: an accessibility line with a name (``button "Save"``) or a text (``text: Saved``)
_NAMED = re.compile(r"""^'?([a-z]+) "((?:[^"\\]|\\.)+)"|^([a-z]+): (.+)$""")  # YAML may quote it
#: WAI-ARIA roles of controls: their label names what the agent may do, not where it is
CONTROLS = frozenset(("button", "link", "menuitem", "menuitemcheckbox", "menuitemradio",
                      "tab", "option", "checkbox", "radio", "switch", "combobox", "textbox",
                      "searchbox", "spinbutton", "slider", "treeitem", "menu", "menubar",
                      "tablist", "toolbar", "listbox"))
CELLS = frozenset(("cell", "gridcell"))
NUMBER = "<number>"  # a cell of a column of numbers
MAX_CELL_WORDS = 4  # the most words of a cell looked for at the end of a row's text
#: roles whose name titles a part of the screen (a section, a notice), read before other text
TITLED = frozenset(("heading", "region", "status", "alert"))
_LEVEL = re.compile(r"\[\s*level\s*=\s*(\d)\s*\]")  # a heading's level: 1 titles the page
REGION, UNTITLED = 7, 9  # the ranks of a section's name and of a text
Examples = Sequence[frozenset[str]]  # the canonical lines of a state's members


class Detail(NamedTuple):
    """A line of a state that may complete its name."""

    template: str
    text: str
    rank: int  # a heading's level (1 the page's), then other titles, then any text
    salient: bool


def shown_lines(state: ModelState, examples: Examples) -> dict[int, str]:
    """Per template of `state` (by its number), the first line of its members' that it
    explains (members in order, each one's lines sorted)."""
    shown: dict[int, str] = {}
    for lines in examples:
        for line in sorted(lines):
            index = state.profile.template_of(line)
            if index is not None:
                shown.setdefault(index, line)
    return shown


def example(state: ModelState, template: str, shown: dict[int, str]) -> str:
    """`template` as a member showed it (`shown`: :func:`shown_lines`): a line it
    explains, its varying words as ``…``."""
    line = shown.get(state.profile.templates.index(template), template)
    body = line.partition("|")[2]
    wanted = tokens(template.partition("|")[2])
    spans = [match.span() for match in TOKEN.finditer(body)]
    if REST in wanted:  # the key kept, its value varied
        cut = spans[wanted.index(REST)][0] if len(spans) > wanted.index(REST) else len(body)
        body = body[:cut] + "…"
    elif len(spans) == len(wanted):
        for (start, end), token in reversed(list(zip(spans, wanted))):
            if token == WILDCARD:
                body = body[:start] + "…" + body[end:]
    return shorten(_PLACEHOLDER.sub("…", body).removeprefix("- ").strip())


def shorten(text: str, limit: int = MAX_NAME, in_word: bool = False) -> str:
    """`text` cut at a word boundary within `limit` characters, with ``…`` when cut; with
    `in_word`, in a word when that keeps twice as much (a long path is one word).

    >>> shorten("edit_file tests/test_modern_combining_marks.py", 30, in_word=True)
    'edit_file tests/test_modern_c…'
    """
    if len(text) <= limit:
        return text
    cut = text[:limit].rsplit(" ", 1)[0]
    return (text[:limit - 1] if in_word and 2 * len(cut) < limit else cut).rstrip(" ,:;") + "…"


def _digit_share(text: str) -> float:
    """The share of digits in `text`, or in its quoted name (``button "Ln 1, Col 1"``)."""
    quoted = re.findall(r'"([^"]*)"', text)
    text = quoted[-1] if quoted else text
    return sum(ch.isdigit() for ch in text) / max(1, sum(ch.isalnum() for ch in text))


class Labels(NamedTuple):
    """What a state's members showed as controls and as a table's parts."""

    labels: set[str]  # every control's and table part's label
    cells: set[str]  # the texts of the table cells alone


def control_labels(examples: Examples) -> Labels:
    """The labels of every control and table part any of a state's members showed (a
    template keeps one member's row; the text of another's is data all the same)."""
    found = Labels(set(), set())
    for line in set().union(*examples):
        named = _NAMED.match(line.partition("|")[2].removeprefix("- ")) \
            if line.startswith("A|") else None
        role = named and (named.group(1) or named.group(3))
        if named and role in CONTROLS | TABLE_ROLES:
            label = (named.group(2) or named.group(4)).replace('\\"', '"')
            found.labels.add(label)
            if role in CELLS:
                found.cells.add(NUMBER if label.isdigit() else label)
    return found


def _cell(text: str) -> str:
    """`text` as a cell is looked up: any number as a column of numbers (a tree may not
    hold the row that shows this one)."""
    return NUMBER if text.isdigit() else text


def _table_row(text: str, cells: set[str]) -> bool:
    """Whether `text` ends in two or more `cells`: a table's row in the visible text (a
    tree may hold only the first rows of a long table; the text holds those scrolled to).

    >>> _table_row("Costa Rica North America 12", {"North America", NUMBER})
    True
    >>> _table_row("Saving completed", {"completed", "1"})
    False
    """
    words, found = text.split(), 0
    while words:
        size = next((n for n in range(min(len(words), MAX_CELL_WORDS), 0, -1)
                     if _cell(" ".join(words[-n:])) in cells), 0)
        if not size:
            break
        words, found = words[:-size], found + 1
    return found >= 2


def _rank(role: str | None, text: str) -> int:
    """How well a line of `role` titles a part of the screen: a heading by its level (the
    page's heading before a section's, ``Table of Contents`` before its ``No Headings``),
    then a region's, a status's or an alert's name, then any other text."""
    level = _LEVEL.search(text) if role == "heading" else None
    return int(level.group(1)) if level else REGION if role in TITLED else UNTITLED


def _listed(found: list[Detail], frequency: Counter[str]) -> set[str]:
    """The headings in `found` of one level that the same states show: they head the parts
    of a list (a gallery's ``Notebook``, ``Console``, ``Other``), not the screen."""
    def kind(detail: Detail) -> tuple[int, int]:
        return detail.rank, frequency[detail.template]

    alike = Counter(kind(d) for d in found if d.rank < REGION)
    return {d.text for d in found if d.rank < REGION and alike[kind(d)] > 1}


def ranked_details(state: ModelState, lines: dict[int, str], frequency: Counter[str],
             labels: Labels) -> list[Detail]:
    """The lines that may complete `state`'s name (`lines`: :func:`shown_lines`), most
    telling first: salient lines first, then the lines fewest states show, titles first
    among equals (higher headings first), in words; no control's or table part's label
    (`labels`: :func:`control_labels`), no place (title, address)."""
    found, controls = [], set(labels.labels)
    salient = set(state.profile.salient_templates)
    for template in state.profile.templates:
        if template.startswith(PLACE_PREFIXES) or not _WORD.search(template[2:]):
            continue
        text = example(state, template, lines)
        named = _NAMED.match(text) if template.startswith("A|") else None
        role = named and (named.group(1) or named.group(3))
        if named and (role in CONTROLS or role in TABLE_ROLES):
            controls.add(named.group(2) or named.group(4))
        elif named or not template.startswith("A|"):
            shown = (named.group(2) or named.group(4)).replace('\\"', '"') if named else text
            found.append(Detail(template, shown, _rank(role, text), template in salient))
    listed = _listed(found, frequency)
    # a heading or a section's name may repeat the label of the tab that opened it
    found = [d for d in found if _WORD.search(d.text) and d.text not in listed and (
        d.rank < UNTITLED or not (_part_of(d.text, controls) or
                                  _table_row(d.text, labels.cells)))]
    return sorted(found, key=lambda d: (not d.salient, _digit_share(d.text) > 0.25,
                                        frequency[d.template], d.rank,
                                        not is_exact(d.template),
                                        PREFERENCE.get(d.template[0], 3), len(d.text), d.text))


def _part_of(text: str, labels: set[str]) -> bool:
    """Whether `text` is one of `labels` or a run of whole words in one (a control's
    label split into text nodes: its shortcut, the words of a table's row).

    >>> _part_of("Alt + Up", {"Access Previous Entry Alt + Up"}), _part_of("Up", {"Upload"})
    (True, False)
    >>> _part_of("39 The Map … Duarte…", {"39 The Map of Ana Duarte Fantasy…"})
    True
    """
    # both may be shortened or have varying words (``…``): each piece of one in the other
    pieces = [f" {piece.strip()} " for piece in text.split("…") if piece.strip()]
    return any(all(piece in f" {label.replace('…', ' ')} " for piece in pieces)
               for label in labels)
