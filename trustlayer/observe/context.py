"""Lines of a state that say how the agent worked, not what its step did.

Three kinds, told from the state, the state before it and the actions between:

* **echoes**: lines restating what the agent put into its action (a command line it
  typed, the text of an edit);
* **receipts**: the text of a state whose action wrote files (a diff, "Edited in..."):
  the files themselves are the evidence;
* **inherited facts**: facts of files the step did not touch, there before it already
  (which files the agent had edited so far: the order of its steps).

Learning never makes such a line salient when it is gone by the run's end
(:func:`trustlayer.learn.evidence.habit_lines`); matching does not count them against a state
that is not an end (:mod:`trustlayer.compare.equivalence`).
"""
from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from functools import lru_cache
from itertools import compress

from trustlayer.observe.canonical import FACT_KINDS, content_lines, mask
from trustlayer.observe.shared import few_in_all, shared_memo, short_text
from trustlayer.observe.trace_events import Action

MIN_ECHO_CHARS = 6  # shorter bodies ("ok", "+ x") are too common to be taken as echoes
_DIFF_MARK = re.compile(r"^[-+>$#]+ ?")  # diff, prompt and quote marks before an echo


_ARGS_JSON = json.JSONEncoder(ensure_ascii=False).encode  # (json.dumps makes one per call)


def _action_text(actions: Iterable[Action]) -> str:
    parts = []
    for action in actions:
        parts += [action.target or "", action.value or ""]
        if action.args:
            parts.append(_ARGS_JSON(action.args))
    return " ".join(mask(part) for part in parts)


@lru_cache(maxsize=64)  # a state's facts are read again as those of the state before
def _facts(lines: frozenset[str]) -> frozenset[str]:
    return frozenset(filter(_FACT.match, lines))


_FACT = re.compile(r"F\|")


def file_facts(lines: Iterable[str]) -> frozenset[str]:
    """The code-snapshot facts among canonical lines."""
    return _facts(lines if isinstance(lines, frozenset) else frozenset(lines))


@lru_cache(maxsize=1 << 16)
def _echo_body(line: str) -> str:
    """What a content line says without its diff, prompt or quote marks, if long enough
    to be an echo of an action (else a text no action's text holds)."""
    body = _DIFF_MARK.sub("", line.partition("|")[2]).strip()
    return body if len(body) >= MIN_ECHO_CHARS else _NO_ECHO


_NO_ECHO = "\n"  # in no action's text (masked: white space folded to single spaces)
_TEXT = re.compile(r"X\|")


def context_lines(lines: frozenset[str], before: frozenset[str] | None,
                  actions: Iterable[Action]) -> frozenset[str]:
    """Echoes, receipts and inherited facts among the content lines of a state's lines
    `lines`, given the canonical lines of the state `before` it (None for a run's first
    state) and the `actions` between.

    >>> run = (Action("tool", "run_tests", "pytest -q tests"),)
    >>> sorted(context_lines(frozenset({"X|$ pytest -q tests", "X|3 passed"}), frozenset(), run))
    ['X|$ pytest -q tests']
    >>> before = frozenset({"F|changed a.py", "F|unchanged b.py"})
    >>> after = frozenset({"F|changed a.py", "F|changed b.py", "X|Edited b.py"})
    >>> sorted(context_lines(after, before, (Action("tool", "edit_file"),)))
    ['F|changed a.py', 'X|Edited b.py']
    """
    content = content_lines(lines)
    facts = file_facts(content)
    return content_context((content - facts,), facts,
                           None if before is None else file_facts(before), actions)


def content_context(shown: Sequence[frozenset[str]], facts: frozenset[str],
                    facts_before: frozenset[str] | None,
                    actions: Iterable[Action]) -> frozenset[str]:
    """:func:`context_lines` of a state whose content lines are its `shown` parts (the
    lines of its text, of its tree) and its file `facts`, given the file facts of the state
    before (None for a run's first state)."""
    if facts_before is None:
        return frozenset()
    return _context(tuple(shown), facts, facts_before, _action_text(actions))


# a fleet's runs show the same states after the same actions: the very same lines then
# (fingerprints share a state's parts), found at once, and the context found is shared too
@shared_memo(1024, lambda shown, _, __, text: short_text(text) and few_in_all(shown))
def _context(shown: tuple[frozenset[str], ...], facts: frozenset[str],
             facts_before: frozenset[str], text: str) -> frozenset[str]:
    # files left alone keep their very facts (a code snapshot is mostly facts): not copied
    kept = facts if facts is facts_before else facts & facts_before
    found = [] if facts == facts_before else \
        [line for part in shown for line in filter(_TEXT.match, part)]
    if text:  # (the lines whose body the text holds)
        # a fact's body starts with its kind: a text naming none echoes no fact, and most
        # of a code snapshot's lines are facts
        echoing = (*shown, facts) if any(kind in text for kind in FACT_KINDS) else shown
        for lines in echoing:
            found.extend(compress(lines, map(text.__contains__, map(_echo_body, lines))))
    return kept.union(found) if found else kept
