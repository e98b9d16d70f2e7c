"""Human names for model states: distinct, stable, and readable, from what the runs showed.

A state's name is its `label` if the runner gave one; else the title of a dialog in its
accessibility tree, its window title without the application's name (the title part every
titled state shares: ``untitled.txt`` of ``untitled.txt - JupyterLab``), the name of the
open tab panel (the view a tabbed area shows), or for a tool's output the command that led
to it (``read_file slugify/slugify.py``). A name that does not single the state out is
completed by its most telling content, a heading first (the higher level first: a panel's
``Table of Contents`` before its ``No Headings``; never the headings of a list's parts,
shown together), then a section's title, then a line few states show, never a control's
label nor a table's row or cell, nor a piece of one (a dialog's ``Cancel`` names it no
better than any dialog's; a menu item's shortcut, a row of data, in the tree or only in
the visible text, say nothing of where the agent is): the content the states of the same
name lack when there is some. Names are written as a training run showed them
(``python-slugify``, not the template's tokens ``python - slugify``), with masked and
varying values as ``…``, in at most :data:`MAX_NAME` characters; lines that are mostly
numbers (a cursor position in a status bar) tell least.
"""
from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from statistics import median
from typing import NamedTuple

from trustlayer.learn.menus import opened_menu
from trustlayer.model import ModelState
from trustlayer.observe.canonical import PLACE_PREFIXES, TOKEN, tokens
from trustlayer.observe.templates import REST, WILDCARD, is_exact

MAX_NAME = 70
MAX_DETAIL = 50  # characters of a line completing a name
KEPT = 30  # characters of a name kept before the line completing it is shortened
PREFERENCE = {"X": 0, "A": 1, "F": 2}  # visible text names a state best
_WORD = re.compile(r"[^\W\d_]{3,}")  # a word worth reading in a name
_PLACEHOLDER = re.compile(r"<[a-z]+>|<\*\*?>")
_DIALOG = re.compile(r'^(?:dialog|alertdialog) "([^"]+)"')
#: an accessibility line with a name (``button "Save"``) or a text (``text: Saved``)
_NAMED = re.compile(r"""^'?([a-z]+) "((?:[^"\\]|\\.)+)"|^([a-z]+): (.+)$""")  # YAML may quote it
#: WAI-ARIA roles of controls: their label names what the agent may do, not where it is
CONTROLS = frozenset(("button", "link", "menuitem", "menuitemcheckbox", "menuitemradio",
                      "tab", "option", "checkbox", "radio", "switch", "combobox", "textbox",
                      "searchbox", "spinbutton", "slider", "treeitem", "menu", "menubar",
                      "tablist", "toolbar", "listbox"))
#: separators of a window title's parts (``page - app``, ``page | site``)
_TITLE_SEPARATOR = r"\s+[-|—–·]\s+"
#: WAI-ARIA roles of a table's parts: a cell's text is data, not where the agent is
TABULAR = frozenset(("row", "cell", "gridcell", "columnheader", "rowheader"))
CELLS = frozenset(("cell", "gridcell"))
NUMBER = "<number>"  # a cell of a column of numbers
MAX_CELL_WORDS = 4  # the most words of a cell looked for at the end of a row's text
#: roles whose name titles a part of the screen (a section, a notice), read before other text
TITLED = frozenset(("heading", "region", "status", "alert"))
_LEVEL = re.compile(r"\[\s*level\s*=\s*(\d)\s*\]")  # a heading's level: 1 titles the page
REGION, UNTITLED = 7, 9  # the ranks of a section's name and of a text
_PANEL = re.compile(r'^tabpanel "([^"]+)"')  # the open document or view of a tabbed area
COMMANDS = ("tool:", "api:")  # actions whose command names the output they led to
Examples = Sequence[frozenset[str]]  # the canonical lines of a state's members


class Detail(NamedTuple):
    """A line of a state that may complete its name."""

    template: str
    text: str
    rank: int  # a heading's level (1 the page's), then other titles, then any text
    salient: bool


def _shown_lines(state: ModelState, examples: Examples) -> dict[int, str]:
    """Per template of `state` (by its number), the first line of its members' that it
    explains (members in order, each one's lines sorted)."""
    shown: dict[int, str] = {}
    for lines in examples:
        for line in sorted(lines):
            index = state.profile.template_of(line)
            if index is not None:
                shown.setdefault(index, line)
    return shown


def _example(state: ModelState, template: str, shown: dict[int, str]) -> str:
    """`template` as a member showed it (`shown`: :func:`_shown_lines`): a line it
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
    return _shorten(_PLACEHOLDER.sub("…", body).removeprefix("- ").strip())


def _shorten(text: str, limit: int = MAX_NAME, in_word: bool = False) -> str:
    """`text` cut at a word boundary within `limit` characters, with ``…`` when cut; with
    `in_word`, in a word when that keeps twice as much (a long path is one word).

    >>> _shorten("edit_file tests/test_modern_combining_marks.py", 30, in_word=True)
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


def app_name(titles: Iterable[str]) -> str | None:
    """The title part every one of `titles` (one per titled state) shows: the
    application's name; None for fewer than two titles or no shared part.

    >>> app_name(["untitled.txt - JupyterLab", "JupyterLab"]), app_name(["a", "b"])
    ('JupyterLab', None)
    """
    parts = [set(re.split(_TITLE_SEPARATOR, title)) for title in titles]
    common = set.intersection(*parts) if len(parts) > 1 else set()
    return max(sorted(common), key=len) if common else None


def without_app(title: str, app: str | None) -> str:
    """`title` without the part `app` and its separator.

    >>> without_app("Crime | Change category | Library admin", "Library admin")
    'Crime | Change category'
    >>> without_app("JupyterLab", "JupyterLab")
    ''
    """
    if not app:
        return title
    parts = re.split(f"({_TITLE_SEPARATOR})", title)
    separator = parts[1] if len(parts) > 1 else ""
    return separator.join(part for part in parts[::2] if part != app).strip()


def _command(signatures: Sequence[str]) -> str:
    """The tool call that led to most of a state's members (``read_file x.py``), if any."""
    called = Counter(sig.split(":", 1)[1].replace(":", " ").strip()
                     for sig in signatures if sig.startswith(COMMANDS))
    if not called:
        return ""
    command, count = called.most_common(1)[0]
    return command if 2 * count >= len(signatures) else ""


def _base_name(state: ModelState, labels: Sequence[str], titles: Sequence[str],
               lines: dict[int, str], app: str | None, commands: Sequence[str]) -> str:
    if labels:
        return Counter(labels).most_common(1)[0][0]
    shown = [_example(state, t, lines) for t in state.profile.salient_templates
             if t.startswith("A|")]
    dialog = next((m.group(1) for text in shown if (m := _DIALOG.match(text))), None)
    if dialog:
        return _shorten(dialog.strip())
    title = without_app(Counter(titles).most_common(1)[0][0], app) if titles else ""
    if title:
        return _shorten(title)
    panel = next((m.group(1) for text in shown if (m := _PANEL.match(text))), None)
    return _shorten(panel.strip()) if panel else _command(commands)


class Labels(NamedTuple):
    """What a state's members showed as controls and as a table's parts."""

    labels: set[str]  # every control's and table part's label
    cells: set[str]  # the texts of the table cells alone


def _labels(examples: Examples) -> Labels:
    """The labels of every control and table part any of a state's members showed (a
    template keeps one member's row; the text of another's is data all the same)."""
    found = Labels(set(), set())
    for line in set().union(*examples):
        named = _NAMED.match(line.partition("|")[2].removeprefix("- ")) \
            if line.startswith("A|") else None
        role = named and (named.group(1) or named.group(3))
        if named and role in CONTROLS | TABULAR:
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


def _details(state: ModelState, lines: dict[int, str], frequency: Counter[str],
             labels: Labels) -> list[Detail]:
    """The lines that may complete `state`'s name (`lines`: :func:`_shown_lines`), most
    telling first: salient lines first, then the lines fewest states show, titles first
    among equals (higher headings first), in words; no control's or table part's label
    (`labels`: :func:`_labels`), no place (title, address)."""
    found, controls = [], set(labels.labels)
    salient = set(state.profile.salient_templates)
    for template in state.profile.templates:
        if template.startswith(PLACE_PREFIXES) or not _WORD.search(template[2:]):
            continue
        text = _example(state, template, lines)
        named = _NAMED.match(text) if template.startswith("A|") else None
        role = named and (named.group(1) or named.group(3))
        if named and (role in CONTROLS or role in TABULAR):
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


def _telling(details: list[Detail], others: list[list[Detail]], name: str,
             distinct: bool) -> str:
    """The most telling of `details` that none of `others` (states of the same `name`)
    shows (with `distinct`, only such a one, else ""), else the most telling; none that
    `name` holds already."""
    held = {d.text for other in others for d in other}
    fresh = [d.text for d in details if " ".join(d.text.split()[:3]) not in name]
    found = next((text for text in fresh if text not in held),
                 "" if distinct or not fresh else fresh[0])
    return _shorten(found, MAX_DETAIL if name else MAX_NAME)


def _plainest(plain: list[str], details: dict[str, list[Detail]]) -> str | None:
    """Of states nothing tells apart from the others of their name, the one that keeps the
    name: it shows nothing the rest do not (the empty editor among edited ones)."""
    texts = {sid: {d.text for d in details[sid]} for sid in plain}
    least = min(plain, key=lambda sid: len(texts[sid]), default=None)
    return least if least and all(texts[least] <= texts[sid] for sid in plain) else None


def _tell_apart(names: dict[str, str], details: dict[str, list[Detail]]) -> None:
    """Complete, in place, every name several states share (or none has) by what each of
    them shows and the others do not; one showing nothing more keeps the name."""
    alike = defaultdict(list)
    for sid, name in names.items():
        alike[name].append(sid)
    for name, group in alike.items():
        if name and len(group) == 1:
            continue
        others = {sid: [details[o] for o in group if o != sid] for sid in group}
        chosen = {sid: _telling(details[sid], others[sid], name, True) for sid in group}
        plain = [sid for sid in group if not chosen[sid]]
        keeper = _plainest(plain, details) if name else None
        for sid in plain:
            if sid != keeper:
                chosen[sid] = _telling(details[sid], others[sid], name, False)
        for sid in group:
            detail = chosen[sid]
            names[sid] = _join(name, detail) if name and detail else name or detail


def name_states(states: Sequence[ModelState], labels: dict[str, list[str]],
                titles: dict[str, list[str]], examples: dict[str, Examples],
                commands: dict[str, list[str]] | None = None) -> None:
    """Give every state a distinct name, in place. `states` must be in id order;
    `examples` holds each state's members' canonical lines, `commands` the signatures of
    the actions that led to them."""
    commands = commands or {}
    # how many states show a line: its salient ones, then (ranked after them) the others
    frequency = Counter(t for s in states for t in set(s.profile.salient_templates))
    frequency.update(t for s in states for t in set(s.profile.templates)
                     if t not in s.profile.salient_templates)
    app = app_name(Counter(titles[s.id]).most_common(1)[0][0] for s in states if titles.get(s.id))
    shown = {s.id: _shown_lines(s, examples.get(s.id, [])) for s in states}
    names = {s.id: _base_name(s, labels.get(s.id, []), titles.get(s.id, []), shown[s.id], app,
                              commands.get(s.id, []))
             for s in states}
    for state in states:  # an open menu is what a person calls the screen, on its page
        menu = opened_menu(state.profile.templates, commands.get(state.id, []))
        if menu:
            names[state.id] = _join(names[state.id], menu) if names[state.id] else menu
    details = {s.id: _details(s, shown[s.id], frequency, _labels(examples.get(s.id, [])))
               for s in states}
    _tell_apart(names, {sid: [d for d in found if d.salient] for sid, found in details.items()})
    first = dict(names)  # told apart by salient lines: the names a fallback starts from
    _tell_apart(names, details)
    names = {sid: _fit(name) for sid, name in names.items()}
    taken = Counter(names.values())
    unique = [s for s in states if names[s.id] and taken[names[s.id]] == 1]
    for state in unique:
        state.name = names[state.id]
    alike = [s for s in states if s not in unique]
    for state in alike:  # nothing tells it apart: when it was seen does
        names[state.id] = first[state.id] or (
            app if app and titles.get(state.id) else
            "a screen without text" if not state.profile.templates else "an unnamed screen")
    _number_alike(alike, names, {s.name for s in unique})


def _join(name: str, detail: str) -> str:
    """`name` completed by `detail` in at most :data:`MAX_NAME` characters: the name
    shortened first (the detail tells the state apart), to no less than :data:`KEPT`
    (it says what the state is), then the detail.

    >>> _join("countries: 56 rows where continent = Africa sorted by name", "Advanced export")
    'countries: 56 rows where continent = Africa sorted…: Advanced export'
    """
    if len(name) + len(": ") + len(detail) <= MAX_NAME:
        return f"{name}: {detail}"
    room = MAX_NAME - len(": ")
    detail = _shorten(detail, room - min(len(name), KEPT) - 1, in_word=True)
    return f"{_shorten(name, room - len(detail) - 1, in_word=True)}: {detail}"


def _fit(name: str, room: int = MAX_NAME) -> str:
    """`name` in at most `room` characters (:func:`_shorten` may add its ``…``)."""
    return name if len(name) <= room else _shorten(name, room - 1)


def _number_alike(states: Sequence[ModelState], names: dict[str, str], used: set[str]) -> None:
    """Name `states` that nothing they show tells apart by when successful runs saw them:
    ``JupyterLab (1 of 3)`` first, by the median step of their members (a person reads
    the order, never a run's id); ``… (another)`` beside a state of that name (`used`)."""
    alike: dict[str, list[ModelState]] = defaultdict(list)
    for state in states:
        alike[names[state.id]].append(state)
    for name, group in alike.items():
        group.sort(key=lambda s: (median(seq for _, seq in s.members) if s.members else 0,
                                  len(s.id), s.id))
        for number, state in enumerate(group, 1):
            suffix = f" ({number} of {len(group)})" if len(group) > 1 else \
                " (another)" if _fit(name) in used else ""
            state.name = _fit(name, MAX_NAME - len(suffix)) + suffix
