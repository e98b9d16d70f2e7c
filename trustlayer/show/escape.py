"""Trace text made safe for where it is written: a run id, a state's text or an action's
target is the agent's (or an attacker's) text, and must not steer what shows it.

* :func:`printable`, for a terminal and a log line: control characters (ANSI escapes, a
  carriage return, a new line, a bell) shown escaped, so the text can neither move the
  cursor, retitle a terminal, nor start a line of its own (a line starting ``::`` is a
  GitHub workflow command in a job log);
* :func:`escape_log_records`, for the logs of trustlayer's own loggers (the worker's too);
* :func:`markdown_text`, for Markdown (the CI step summary): printable, then HTML and the
  characters Markdown gives a meaning escaped, so it renders as the text it is.

A code fence is never written around trace text: the action puts error lines in an HTML
``<pre>`` with the text escaped instead (``action.yml``).
"""
from __future__ import annotations

import html
import logging
import re
from typing import Any

#: every C0 control character but the tab, DEL and the C1 controls (CSI among them)
_CONTROL = re.compile(r"[\x00-\x08\x0a-\x1f\x7f-\x9f]")
#: what GitHub's Markdown gives a meaning inside a table cell: a cell's end, a code span,
#: emphasis, a link or an image (an underscore inside a word is none)
_MARKDOWN = re.compile(r"([\\`*\[\]|])")


def _escaped(match: re.Match[str]) -> str:
    char = match.group()
    return {"\n": "\\n", "\r": "\\r"}.get(char, f"\\x{ord(char):02x}")


def printable(text: object) -> str:
    """`text` as one line a terminal or a log shows as it is.

    >>> printable("r1\\n::error title=FORGED::x\\x1b[2J\\x1b]0;T\\x07")
    'r1\\\\n::error title=FORGED::x\\\\x1b[2J\\\\x1b]0;T\\\\x07'
    """
    return _CONTROL.sub(_escaped, str(text))


def markdown_text(text: object) -> str:
    """`text` as Markdown that renders as the text itself (on one line).

    >>> markdown_text("a|b\\r## X <img src=x> [y](z)")
    'a\\\\|b\\\\\\\\r## X &lt;img src=x&gt; \\\\[y\\\\](z)'
    """
    return _MARKDOWN.sub(r"\\\1", html.escape(printable(text), quote=False))


#: The loggers whose records are made one printable line (their messages quote runs).
OWN_LOGGERS = ("trustlayer", "stream")
_escaping = False


def escape_log_records() -> None:
    """From now on, the message of every record of :data:`OWN_LOGGERS` is one printable
    line (its traceback, kept apart, still has its lines): a run id cannot start a log line
    of its own. Once per process, whichever handlers print the records (Faust's too)."""
    global _escaping
    if _escaping:
        return
    make = logging.getLogRecordFactory()

    def one_line(*args: Any, **kwargs: Any) -> logging.LogRecord:
        record = make(*args, **kwargs)
        if record.name.partition(".")[0] in OWN_LOGGERS:
            record.msg, record.args = printable(record.getMessage()), ()
        return record

    logging.setLogRecordFactory(one_line)
    _escaping = True
