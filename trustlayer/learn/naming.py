"""Human names for model states: distinct, stable, and readable.

A state's name is its `label` if the runner gave one; else a dialog from its
accessibility tree, its window title, or a heading; completed, when that does not single
it out, by its most telling salient line. Names are written as a training run showed
them (``python-slugify``, not the template's tokens ``python - slugify``), with masked
and varying values as ``…``; lines that are mostly numbers (a cursor position in a
status bar) tell least. A name still shared is numbered: ``Launcher (2)``.
"""
from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence

from trustlayer.model import ModelState
from trustlayer.observe.canonical import PLACE_PREFIXES, TOKEN, tokens
from trustlayer.observe.templates import REST, WILDCARD, is_exact

MAX_NAME = 70
PREFERENCE = {"X": 0, "A": 1, "F": 2}  # visible text names a state best
_WORD = re.compile(r"[^\W\d_]{3,}")  # a word worth reading in a name
_PLACEHOLDER = re.compile(r"<[a-z]+>")
_DIALOG = re.compile(r'^- (?:dialog|alertdialog) "([^"]+)"')
_HEADING = re.compile(r'^- heading "([^"]+)"')
Examples = Sequence[frozenset[str]]  # the canonical lines of a state's members


def _example(state: ModelState, template: str, examples: Examples) -> str:
    """`template` as a member showed it: a line it explains, its varying words as ``…``."""
    index = state.profile.templates.index(template)
    line = next((line for lines in examples for line in sorted(lines)
                 if state.profile.template_of(line) == index), template)
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


def _shorten(text: str, limit: int = MAX_NAME) -> str:
    """`text` cut at a word boundary within `limit` characters, with ``…`` when cut."""
    if len(text) <= limit:
        return text
    return text[:limit].rsplit(" ", 1)[0].rstrip(" ,:;") + "…"


def _digit_share(text: str) -> float:
    """The share of digits in `text`, or in its quoted name (``button "Ln 1, Col 1"``)."""
    quoted = re.findall(r'"([^"]*)"', text)
    text = quoted[-1] if quoted else text
    return sum(ch.isdigit() for ch in text) / max(1, sum(ch.isalnum() for ch in text))


def _base_name(state: ModelState, labels: Sequence[str], titles: Sequence[str],
               examples: Examples) -> str:
    if labels:
        return Counter(labels).most_common(1)[0][0]
    shown = [_example(state, t, examples) for t in state.profile.salient_templates
             if t.startswith("A|")]
    dialog = next((m.group(1) for text in shown if (m := _DIALOG.match(f"- {text}"))), None)
    if dialog:
        return _shorten(dialog.strip())
    if titles:
        return _shorten(Counter(titles).most_common(1)[0][0])
    return next((m.group(1).strip() for text in shown if (m := _HEADING.match(f"- {text}"))), "")


def name_states(states: Sequence[ModelState], labels: dict[str, list[str]],
                titles: dict[str, list[str]], examples: dict[str, Examples]) -> None:
    """Give every state a distinct name, in place. `states` must be in id order;
    `examples` holds each state's members' canonical lines."""
    frequency = Counter(t for s in states for t in set(s.profile.salient_templates))
    bases = {s.id: _base_name(s, labels.get(s.id, []), titles.get(s.id, []),
                              examples.get(s.id, [])) for s in states}
    base_count = Counter(bases.values())
    used: Counter[str] = Counter()
    for number, state in enumerate(states):
        name = bases[state.id]
        if not name or base_count[name] > 1:
            telling = sorted(((t, _example(state, t, examples.get(state.id, [])))
                              for t in state.profile.salient_templates
                              if not t.startswith(PLACE_PREFIXES) and _WORD.search(t[2:])),
                             key=lambda pair: (_digit_share(pair[1]) > 0.25, frequency[pair[0]],
                                               not is_exact(pair[0]),
                                               PREFERENCE.get(pair[0][0], 3), len(pair[1]),
                                               pair[1]))
            detail = telling[0][1] if telling else ""
            name = f"{name}: {detail}" if name and detail else name or detail
        name = name or f"state {number}"
        used[name] += 1
        state.name = name if used[name] == 1 else f"{name} ({used[name]})"
