"""Verdicts in a terminal, as pytest prints its results: a line per run, coloured only on a
terminal that wants colour, and one closing summary line with the counts and the time."""
from __future__ import annotations

import os
import textwrap
from collections import Counter
from typing import Any, TextIO

from trustlayer.show.escape import printable

STYLES = {"green": "32", "red": "31", "yellow": "33", "bold": "1", "dim": "2"}


def wants_colour(stream: TextIO) -> bool:
    """Colour on a terminal, never when ``NO_COLOR`` is set (no-color.org) or ``TERM`` is
    ``dumb``; ``FORCE_COLOR`` asks for it anyway."""
    if os.environ.get("NO_COLOR"):
        return False
    if os.environ.get("FORCE_COLOR"):
        return True
    return os.environ.get("TERM") != "dumb" and hasattr(stream, "isatty") and stream.isatty()


class Painter:
    """Wraps text in ANSI colours, or leaves it as it is when colour is off."""

    def __init__(self, colour: bool):
        self.colour = colour

    def __call__(self, text: str, *styles: str) -> str:
        """`text` in `styles` (names of :data:`STYLES`).

        >>> Painter(True)("FAIL", "bold", "red")
        '\\x1b[1;31mFAIL\\x1b[0m'
        >>> Painter(False)("FAIL", "red")
        'FAIL'
        """
        if not self.colour or not styles:
            return text
        return f"\x1b[{';'.join(STYLES[s] for s in styles)}m{text}\x1b[0m"


INDENT = " " * 5  # under the run id, past "FAIL "


def indented(text: str, width: int | None) -> str:
    """`text` under a verdict line: indented, and wrapped to `width` columns between words
    (each line keeping the indent) when given; one line for a file or a pipe, whose
    reader may grep it.

    >>> print(indented("Failed at step 3: expected 'a'", 20))
         Failed at step
         3: expected 'a'
    """
    if width is None:
        return INDENT + text
    return textwrap.fill(text, width, initial_indent=INDENT, subsequent_indent=INDENT,
                         break_long_words=False, break_on_hyphens=False)


def verdict_text(record: dict[str, Any], paint: Painter, verbose: bool = False,
                 width: int | None = None) -> str:
    """One run's verdict: a line for a pass, and the reason under a failure; `verbose`: the
    reason under a pass too, and the decision path under the reason; texts wrapped to
    `width` columns when given (:func:`indented`).

    >>> print(verdict_text({"run_id": "r", "verdict": "fail", "coverage": 0.5, "cause":
    ...     "agent_error", "reason": "Failed at step 3: ...", "details": "x never reached"},
    ...     Painter(False), verbose=True))
    FAIL r  coverage 50%  cause agent_error
         Failed at step 3: ...
         x never reached
    """
    coverage, run = f"coverage {record['coverage']:.0%}", printable(record["run_id"])
    if record["verdict"] == "pass":
        line = f"{paint('PASS', 'green')} {run}  {coverage}"
    else:
        line = f"{paint('FAIL', 'bold', 'red')} {run}  {coverage}  cause {record['cause']}"
    if record["verdict"] != "pass" or verbose:
        line += "\n" + indented(printable(record.get("reason") or ""), width)
    if verbose and record.get("details") and record["details"] != record.get("reason"):
        line += "\n" + paint(indented(printable(record["details"]), width), "dim")
    return line


def summary_line(records: list[dict[str, Any]], seconds: float, paint: Painter,
                 width: int = 80) -> str:
    """The closing line: counts of failed and passed runs, failures by cause, the time.

    >>> summary_line([{"verdict": "fail", "cause": "product_bug"}, {"verdict": "pass"}],
    ...              1.25, Painter(False), 60)
    '======= 1 failed (1 product bug), 1 passed in 1.25s ========'
    """
    failed = [r for r in records if r["verdict"] != "pass"]
    causes = Counter((r.get("cause") or "unknown cause").replace("_", " ") for r in failed)
    parts = []
    if failed:
        by_cause = ", ".join(f"{n} {cause}{'s' if n > 1 else ''}"
                             for cause, n in sorted(causes.items()))
        parts.append(f"{len(failed)} failed ({by_cause})")
    if len(records) > len(failed) or not records:
        parts.append(f"{len(records) - len(failed)} passed")
    text = f" {', '.join(parts)} in {seconds:.2f}s "
    side = max(3, (width - len(text)) // 2)
    line = "=" * side + text + "=" * max(3, width - side - len(text))
    return paint(line, "bold", "red" if failed else "green")
