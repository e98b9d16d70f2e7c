"""The demo's live screen (``trustlayer demo``): a table of runs that fits the terminal, one
line per run at 80 columns and more columns as the width allows, then every reason whole."""
from __future__ import annotations

import re
import time
from collections.abc import Callable
from typing import Any

from rich import box
from rich.console import Console, ConsoleOptions, Group, RenderResult
from rich.padding import Padding
from rich.table import Table
from rich.text import Text

from stream.commands.console import verdict_line

STATUS_STYLE = {"running": ("running…", "dim"), "at_risk": ("at risk", "yellow"),
                "passed": ("PASSED", "bold green"), "failed": ("FAILED", "bold red")}  # no ✓ ✗:
# they say whether a verdict agrees with its label (the EXPECTED column)
LEGEND = ("VERDICT: running → at risk (a screen came before the milestone that should precede "
          "it; the run may recover) → PASSED or FAILED (final: it never changes).  COVERAGE: "
          "share of the task's milestones reached in order (interruptions counted).  AT EVENT: "
          "the event (seq) a failure's reason is about, or that decided a pass.  EXPECTED: the "
          "human label in labels.json, ✓ or ✗: the final verdict agrees with it or not.")
SHORT_LEGEND = "COVERAGE: milestones reached in order. Full reasons when it ends."
BAR_CELLS = 6
REASON_INDENT = 5  # a reason under its run's line, as `trustlayer validate` prints it
# the columns a terminal of at least this width shows beside RUN, VERDICT, COVERAGE, REASON
WIDE_COLUMNS = ((100, ("EXPECTED",)), (120, ("AT EVENT", "MODEL")))


def coverage_bar(coverage: float, cells: int = BAR_CELLS) -> str:
    """Coverage as a bar of `cells` blocks and a percentage.

    >>> coverage_bar(0.5)
    '███░░░  50%'
    """
    filled = round(coverage * cells)
    return "█" * filled + "░" * (cells - filled) + f" {coverage:4.0%}"


#: a failure's one sentence (trustlayer.judge.reasons.Reason.sentence): where, and what was
#: shown instead, whose first quote is the evidence
_FAILED = re.compile(r"Failed (?P<where>at step \d+|at the end): .*?; (?P<shown>.*?) instead\b")
_QUOTE = re.compile(r"'[^']*(?:'|…)")


def live_reason(record: dict) -> tuple[tuple[str, str], str]:
    """A verdict's reason as the table's cell shows it, blame and evidence first (the cell
    is narrow at 80 columns): ``agent, step 7: 'Auto Brackets…'``; the whole sentence
    follows in :meth:`LiveScreen.reasons`.

    >>> live_reason({"cause": "agent_error", "reason": "Failed at step 7: expected 'Saved';"
    ...              " the screen showed 'Auto Brackets' instead (agent error)."})
    (('agent, step 7: ', 'bold'), "'Auto Brackets'")
    >>> live_reason({"cause": None, "reason": "Passed: reached all 3 milestones."})
    (('', 'bold'), 'Passed: reached all 3 milestones.')
    """
    cause = (record.get("cause") or "").replace("_", " ")
    reason = record.get("reason") or ""
    failed = _FAILED.match(reason)
    if failed is None:
        return (f"{cause}: " if cause else "", "bold"), reason
    quote = _QUOTE.search(failed["shown"])
    where = failed["where"].removeprefix("at ")
    blame = f"{cause.split()[0]}, {where}: " if cause else f"{where}: "
    return (blame, "bold"), quote.group(0) if quote else failed["shown"]


def _whole_reason(record: dict) -> Text:
    cause = (record.get("cause") or "").replace("_", " ")
    return Text.assemble((f"{cause}: " if cause else "", "bold"), record.get("reason") or "")


def columns_for(width: int) -> list[str]:
    """The table's columns on a terminal `width` characters wide: run, verdict, coverage
    and reason always; more as the width allows.

    >>> columns_for(80)
    ['RUN', 'VERDICT', 'COVERAGE', 'REASON']
    >>> columns_for(120)
    ['RUN', 'EXPECTED', 'VERDICT', 'COVERAGE', 'AT EVENT', 'MODEL', 'REASON']
    """
    extra = {name for least, names in WIDE_COLUMNS if width >= least for name in names}
    return [name for name in ("RUN", "EXPECTED", "VERDICT", "COVERAGE", "AT EVENT", "MODEL",
                              "REASON")
            if name in extra or name in ("RUN", "VERDICT", "COVERAGE", "REASON")]


def expected_label(label: dict[str, Any] | None) -> tuple[str, str | None]:
    """What labels.json says of a run, as the screen shows it, and the verdict it implies.

    >>> expected_label({"outcome": "failure", "cause": "product_bug"})
    ('fail · product bug', 'failed')
    >>> expected_label(None)
    ('—', None)
    """
    if not label:
        return "—", None
    if label.get("outcome") == "success":
        return "pass", "passed"
    cause = (label.get("cause") or "").replace("_", " ")
    return "fail" + (f" · {cause}" if cause else ""), "failed"


class Screen:
    """The demo's live screen: one table line per run, as many columns as the terminal has
    room for (:func:`columns_for`), each reason cut to its line; a legend and notes below.
    Rendered afresh at every refresh of a :class:`rich.live.Live`, so its clock runs;
    without a terminal, one line per change instead. :meth:`reasons` gives the full
    reasons to print once the table is done."""

    def __init__(self, run_ids: list[str], labels: dict[str, dict], title: str,
                 echo: Callable[[str], None] | None = None):
        self.runs: dict[str, dict | None] = {rid: None for rid in run_ids}
        self.labels, self.title, self.echo = labels, title, echo
        self.started = time.monotonic()
        self.notes: list[str] = []

    def update(self, record: dict) -> None:
        self.runs[record["run_id"]] = record
        if self.echo:
            self.echo(f"{self.elapsed():6.1f}s  {verdict_line(record)}")

    def note(self, text: str) -> None:
        """A line under the table (a new model version)."""
        self.notes = (self.notes + [text])[-5:]
        if self.echo:
            self.echo(text)

    def done(self) -> bool:
        return all(r is not None and r.get("final") for r in self.runs.values())

    def elapsed(self) -> float:
        return time.monotonic() - self.started

    def agreement(self) -> tuple[int, int]:
        """How many final verdicts agree with their label, of those with a label."""
        pairs = [(expected_label(self.labels.get(rid))[1], rec["status"])
                 for rid, rec in self.runs.items() if rec is not None and rec.get("final")]
        labelled = [(want, got) for want, got in pairs if want is not None]
        return sum(want == got for want, got in labelled), len(labelled)

    def reasons(self) -> list[Group]:
        """Every run's last verdict in full, for after the table: a line for the run, its
        reason under it, wrapped to the terminal with its indent (not cut)."""
        lines = []
        for run_id, record in self.runs.items():
            if record is not None:
                cells = self._cells(run_id, record)
                lines.append(Group(Text.assemble((f"{run_id}  ", "bold"), cells["VERDICT"],
                                                 "  ", cells["COVERAGE"]),
                                   Padding(_whole_reason(record), (0, 0, 0, REASON_INDENT))))
        return lines

    def _cells(self, run_id: str, record: dict | None) -> dict[str, Any]:
        expected, want = expected_label(self.labels.get(run_id))
        if record is None:
            return {"RUN": run_id, "EXPECTED": expected, "VERDICT": Text("waiting", "dim")}
        final = bool(record.get("final"))
        shown, style = STATUS_STYLE.get(record["status"], (record["status"], ""))
        verdict = Text(shown if final or record["status"] != "failed" else "failing", style)
        agrees = ("", "") if not final or want is None else \
            (" ✓", "green") if want == record["status"] else (" ✗", "bold red")
        # a failure's step (what its reason is about), else the event that decided
        seq = record.get("detected_at_seq") if record.get("step") is None else record["step"]
        reason = Text.assemble(*live_reason(record))
        return {"RUN": run_id, "EXPECTED": Text.assemble(expected, agrees), "VERDICT": verdict,
                "COVERAGE": coverage_bar(record["coverage"]),
                "AT EVENT": "" if seq is None else f"#{seq}",
                "MODEL": f"v{record['model_version']}", "REASON": reason}

    def table(self, width: int) -> Table:
        """The table as a terminal `width` characters wide shows it: one line per run."""
        done = sum(1 for r in self.runs.values() if r is not None and r.get("final"))
        title = Text(f"{done}/{len(self.runs)} decided · {self.elapsed():.1f} s · {self.title}",
                     no_wrap=True, overflow="ellipsis")
        table = Table(title=title, title_justify="left", expand=True,
                      box=box.SIMPLE_HEAD, padding=(0, 1), collapse_padding=True)
        names = columns_for(width)
        for name in names:
            table.add_column(name, no_wrap=True, overflow="ellipsis",
                             ratio=1 if name == "REASON" else None,
                             min_width=12 if name == "REASON" else None,
                             justify="right" if name == "AT EVENT" else "left")
        for run_id, record in self.runs.items():
            cells = self._cells(run_id, record)
            table.add_row(*(cells.get(name, "") for name in names))
        return table

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        width = options.max_width
        yield self.table(width)
        yield Text(LEGEND if width >= 120 else SHORT_LEGEND, "dim")
        yield from (Text(note) for note in self.notes)
