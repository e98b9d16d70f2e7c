"""The deciding lines of a decision as a person reads text: canonical lines (stored one
token apart, ``Name : untitled . txt``) joined back into text (``Name: untitled.txt``),
then compared word by word, the spaces kept as they are."""
from __future__ import annotations

import difflib
import re
from collections.abc import Sequence
from typing import Any

from trustlayer.compare.equivalence import Decision
from trustlayer.show.marks import readable_lines

PIECE = re.compile(r"\s+|<\*\*?>|<[a-z]+>|\w+|[^\w\s]")  # spaces, wildcards, words, marks
CLOSERS, OPENERS, QUOTES = set(",.:;!?)]}%"), set("([{"), set("\"'")
CONTRACTIONS = {"s", "t", "re", "ll", "ve", "d", "m"}  # don ' t: an apostrophe, no quote


def as_text(line: str) -> str:
    """A canonical line with its tokens joined as text: no space before closing marks,
    after opening ones or inside quotes, and a dot between two words kept in the word.

    >>> as_text('- listitem " Name : untitled . txt Size : 0 B , ( ok ) "')
    '- listitem "Name: untitled.txt Size: 0 B, (ok)"'
    >>> as_text("done . Next step , don ' t [ level = 2 ]")
    "done. Next step, don't [level = 2]"
    """
    tokens = line.split()
    out, quoted = "", {quote: False for quote in QUOTES}
    for index, token in enumerate(tokens):
        previous = tokens[index - 1] if index else ""
        glue = not out or out.endswith(tuple(OPENERS)) or token in CLOSERS
        following = tokens[index + 1] if index + 1 < len(tokens) else ""
        if token == "'" and previous[-1:].isalnum() and following in CONTRACTIONS:
            out += token + following
            tokens[index + 1] = ""  # taken with the apostrophe
            continue
        if not token:
            continue
        if token in QUOTES:
            glue = glue or quoted[token]  # a closing quote sits on its word
            quoted[token] = not quoted[token]
        elif previous in QUOTES and quoted[previous]:
            glue = True  # the word after an opening quote
        if previous == "." and token[:1].islower() and out[-2:-1].isalnum():
            glue = True  # untitled . txt: a file name, not a sentence's end
        out += token if glue else " " + token
    return out


def word_diff(expected: str, shown: str) -> list[tuple[str, list[tuple[str, str]]]]:
    """Two lines as rows of (kind, text) parts, compared word by word with their spaces:
    words only the expected line has are ``del``, words only the shown line has ``ins``.

    >>> expected, showed = word_diff("hello world", "hello word")
    >>> expected
    ('expected', [('same', 'hello '), ('del', 'world')])
    >>> showed
    ('showed', [('same', 'hello '), ('ins', 'word')])
    """
    old, new = PIECE.findall(expected), PIECE.findall(shown)
    rows: tuple[list, list] = ([], [])
    for op, a0, a1, b0, b1 in difflib.SequenceMatcher(None, old, new, autojunk=False).get_opcodes():
        kinds = ("same", "same") if op == "equal" else ("del", "ins")
        for row, kind, pieces in ((0, kinds[0], old[a0:a1]), (1, kinds[1], new[b0:b1])):
            if pieces:
                rows[row].append((kind, "".join(pieces)))
    return [("expected", rows[0]), ("showed", rows[1])]


QUOTED = re.compile(r'"(.*)"')  # what an accessibility line says, beside its role


def _words(line: str) -> list[str]:
    """The words a line says: of an accessibility line, its quoted name, not its role."""
    said = QUOTED.search(line)
    return re.findall(r"\w+", (said.group(1) if said else line).lower())


def partner(line: str, shown: Sequence[str], cutoff: float = 0.5) -> str | None:
    """The line of `shown` that says most nearly what `line` says, word by word (at least
    `cutoff` of their words alike), or None: lines are paired before their characters are
    compared, so two buttons with unrelated labels are never shown as one edited.

    >>> partner('- button "Spaces: 4"', ['- button "Text File"', '- button "Spaces: 2"'])
    '- button "Spaces: 2"'
    >>> partner('- button "none"', ['- button "Markdown File"']) is None
    True
    """
    words = _words(line)
    scored = [(difflib.SequenceMatcher(None, words, _words(other), autojunk=False).ratio(),
               other) for other in shown]
    best = max(scored, default=(0.0, None), key=lambda pair: pair[0])
    return best[1] if best[0] >= cutoff else None


def evidence_diff(decision: Decision, novel: Sequence[str]) -> list[dict[str, Any]]:
    """The deciding evidence of a structural decision as a diff a person reads at once:
    each expected line the run lacks beside the line it showed instead that says most
    nearly the same (:func:`partner`; compared word by word), then the other lines it
    showed with words no successful run showed marked."""
    missing = [as_text(line) for line in readable_lines(decision.evidence.get("missing", []), 8)]
    shown = [as_text(line)
             for line in readable_lines(decision.evidence.get("unexplained", []), 8)]
    rows: list[dict[str, Any]] = []
    for line in missing:
        close = partner(line, shown)
        if close is not None:
            shown.remove(close)
            rows += [{"label": label, "parts": parts}
                     for label, parts in word_diff(line, close)]
        else:
            rows.append({"label": "expected, missing", "parts": [("del", line)]})
    words = {word.lower() for word in novel}
    for line in shown:
        parts = [("novel" if piece.lower() in words else "same", piece)
                 for piece in PIECE.findall(line)]
        rows.append({"label": "showed instead", "parts": parts})
    return rows
