"""Human names for model states: distinct, stable, and telling.

A state's name is its `label` if the runner gave one; else a dialog or heading from
its accessibility tree, or its window title; completed, when that does not single it
out, by its most distinctive salient line; else ``S<n>``.
"""
from __future__ import annotations

import re
from collections import Counter
from typing import Sequence

from trustlayer.canonical import PLACE_PREFIXES
from trustlayer.model import ModelState

MAX_NAME = 70
PREFERENCE = {"X": 0, "F": 1, "A": 2}  # visible text names a state best
_WORD = re.compile(r"[^\W\d_]{3,}")  # a word worth reading in a name
_HEADING = re.compile(r'^A\|-? ?(?:dialog|alertdialog|heading)(?: "([^"]+)")?')


def _base_name(state: ModelState, labels: Sequence[str], titles: Sequence[str]) -> str:
    if labels:
        return Counter(labels).most_common(1)[0][0]
    for template in state.profile.salient_templates:
        match = _HEADING.match(template)
        if match and match.group(1) and match.group(1).strip():
            return _readable(f"|{match.group(1).strip()}")
    return Counter(titles).most_common(1)[0][0] if titles else ""


def _readable(template: str) -> str:
    body = template.partition("|")[2].removeprefix("- ")
    return re.sub(r" (?=[.,:;!?)\]/])|(?<=[(\[/.]) ", "", body)[:MAX_NAME]


def name_states(states: Sequence[ModelState], labels: dict[str, list[str]],
                titles: dict[str, list[str]]) -> None:
    """Give every state a distinct name, in place. `states` must be in id order."""
    frequency = Counter(t for s in states for t in set(s.profile.salient_templates))
    bases = {s.id: _base_name(s, labels.get(s.id, []), titles.get(s.id, [])) for s in states}
    base_count = Counter(bases.values())
    used: set[str] = set()
    for number, state in enumerate(states):
        name = bases[state.id]
        if not name or base_count[name] > 1:
            distinctive = sorted((t for t in state.profile.salient_templates
                                  if not t.startswith(PLACE_PREFIXES) and _WORD.search(t[2:])),
                                 key=lambda t: (frequency[t], "*" in t, PREFERENCE.get(t[0], 3),
                                                len(t), t))
            detail = _readable(distinctive[0]) if distinctive else ""
            name = f"{name}: {detail}" if name and detail else name or detail
        name = name or f"S{number}"
        if name in used:
            name = f"{name} ({state.id})"
        used.add(name)
        state.name = name
