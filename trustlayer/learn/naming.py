"""Human names for model states: distinct, stable, and readable, from what the runs showed.

A state's name is its `label` if the runner gave one; else the title of a dialog in its
accessibility tree, its window title without the application's name (the title part every
titled state shares: ``untitled.txt`` of ``untitled.txt - JupyterLab``), the name of the
open tab panel (the view a tabbed area shows), for a tool's output the command that led
to it (``read_file slugify/slugify.py``), or for a page without a title its address
(``/atlas/books/243.json``). A name that does not single the state out is
completed by its most telling content (:mod:`trustlayer.learn.name_details`), the content
the states of the same name lack when there is some; an open menu by the click that opened
it (:mod:`trustlayer.learn.menus`). Every name fits in :data:`MAX_NAME` characters.
"""
from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from statistics import median

from trustlayer.learn.menus import opened_menu
from trustlayer.learn.name_details import (
    MAX_NAME,
    Detail,
    Examples,
    control_labels,
    example,
    ranked_details,
    shorten,
    shown_lines,
)
from trustlayer.model import ModelState

MAX_DETAIL = 50  # characters of a line completing a name
KEPT = 30  # characters of a name kept before the line completing it is shortened
_DIALOG = re.compile(r'^(?:dialog|alertdialog) "([^"]+)"')
#: separators of a window title's parts (``page - app``, ``page | site``)
_TITLE_SEPARATOR = r"\s+[-|—–·]\s+"
_PANEL = re.compile(r'^tabpanel "([^"]+)"')  # the open document or view of a tabbed area
COMMANDS = ("tool:", "api:")  # actions whose command names the output they led to


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
    shown = [example(state, t, lines) for t in state.profile.salient_templates
             if t.startswith("A|")]
    dialog = next((m.group(1) for text in shown if (m := _DIALOG.match(text))), None)
    if dialog:
        return shorten(dialog.strip())
    title = without_app(Counter(titles).most_common(1)[0][0], app) if titles else ""
    if title:
        return shorten(title)
    panel = next((m.group(1) for text in shown if (m := _PANEL.match(text))), None)
    if panel:
        return shorten(panel.strip())
    command = _command(commands)
    if command or titles:
        return command
    # a page without a title (a JSON or CSV export) is named by its address, as the address
    # bar shows it: where the person is, not a line of what it shows
    address = next((example(state, t, lines) for t in state.profile.salient_templates
                    if t.startswith("U|")), "")
    return shorten(address, in_word=True)


def _telling(details: list[Detail], others: list[list[Detail]], name: str,
             distinct: bool) -> str:
    """The most telling of `details` that none of `others` (states of the same `name`)
    shows (with `distinct`, only such a one, else ""), else the most telling; none that
    `name` holds already."""
    held = {d.text for other in others for d in other}
    fresh = [d.text for d in details if " ".join(d.text.split()[:3]) not in name]
    found = next((text for text in fresh if text not in held),
                 "" if distinct or not fresh else fresh[0])
    return shorten(found, MAX_DETAIL if name else MAX_NAME)


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
    shown = {s.id: shown_lines(s, examples.get(s.id, [])) for s in states}
    names = {s.id: _base_name(s, labels.get(s.id, []), titles.get(s.id, []), shown[s.id], app,
                              commands.get(s.id, []))
             for s in states}
    for state in states:  # an open menu is what a person calls the screen, on its page
        menu = opened_menu(state.profile.templates, commands.get(state.id, []))
        if menu:
            names[state.id] = _join(names[state.id], menu) if names[state.id] else menu
    details = {s.id: ranked_details(s, shown[s.id], frequency,
                                    control_labels(examples.get(s.id, [])))
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
    detail = shorten(detail, room - min(len(name), KEPT) - 1, in_word=True)
    return f"{shorten(name, room - len(detail) - 1, in_word=True)}: {detail}"


def _fit(name: str, room: int = MAX_NAME) -> str:
    """`name` in at most `room` characters (:func:`shorten` may add its ``…``)."""
    return name if len(name) <= room else shorten(name, room - 1)


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
