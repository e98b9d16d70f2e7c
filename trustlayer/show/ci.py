"""Verdicts of ``trustlayer validate`` in the forms CI systems read: JUnit XML (one test
case per run, a failure carrying the reason) and a Markdown summary table (fit for
``$GITHUB_STEP_SUMMARY``); and the exit code that ``--fail-on`` asks for.
"""
from __future__ import annotations

import json
import re
import sys
import xml.etree.ElementTree as ET
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from trustlayer.show.escape import markdown_text

FAIL_ON = ("any", "product_bug")
#: Characters XML 1.0 does not allow (a run id or reason may hold them): shown as ``\xNN``.
NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")


def failed(records: Sequence[dict[str, Any]], fail_on: str = "any") -> list[dict[str, Any]]:
    """The failed runs that should fail the build: every failure for ``any``; for
    ``product_bug`` only the failures blamed on the product (an agent's stumble is
    reported but does not block).

    >>> runs = [{"verdict": "fail", "cause": "agent_error"}, {"verdict": "pass", "cause": None}]
    >>> len(failed(runs)), len(failed(runs, "product_bug"))
    (1, 0)
    """
    if fail_on not in FAIL_ON:
        raise ValueError(f"fail_on must be one of {', '.join(FAIL_ON)}, not {fail_on!r}")
    return [r for r in records if r["verdict"] == "fail"
            and (fail_on == "any" or r.get("cause") == "product_bug")]


def counts(records: Sequence[dict[str, Any]]) -> dict[str, int]:
    """How many runs passed and failed, and the failures by cause.

    >>> counts([{"verdict": "fail", "cause": "agent_error"}, {"verdict": "pass", "cause": None}])
    {'passed': 1, 'failed': 1, 'product-bugs': 0, 'agent-errors': 1}
    """
    failures = [r for r in records if r["verdict"] == "fail"]
    return {"passed": len(records) - len(failures), "failed": len(failures),
            "product-bugs": sum(r.get("cause") == "product_bug" for r in failures),
            "agent-errors": sum(r.get("cause") == "agent_error" for r in failures)}


def junit_xml(records: Sequence[dict[str, Any]], task: str) -> str:
    """One ``<testsuite>`` for the task, one ``<testcase>`` per run; a failed run's
    ``<failure>`` has the reason as message, the cause as type and the details as text
    (with the step: the ``seq`` of the event the reason is about)."""
    failures = [r for r in records if r["verdict"] == "fail"]
    suites = ET.Element("testsuites", name="trustlayer", tests=str(len(records)),
                        failures=str(len(failures)), errors="0")
    suite = ET.SubElement(suites, "testsuite", name=task, tests=str(len(records)),
                          failures=str(len(failures)), errors="0", skipped="0")
    for record in records:
        case = ET.SubElement(suite, "testcase", classname=f"trustlayer.{task}",
                             name=record["run_id"])
        details = [f"coverage {record['coverage']:.0%}"]
        if record.get("details") and record["details"] != record.get("reason"):
            details.append(f"decision path: {record['details']}")
        if record.get("missing"):
            details.append("missing milestones: " + ", ".join(record["missing"]))
        details += [f"warning: {w}" for w in record.get("warnings") or []]
        if record["verdict"] == "fail":
            failure = ET.SubElement(case, "failure", message=record.get("reason") or "failed",
                                    type=record.get("cause") or "failure")
            step = [] if record.get("step") is None else [f"step: {record['step']}"]
            failure.text = "\n".join([record.get("reason") or "failed",
                                      f"cause: {record.get('cause')}", *step, *details])
        else:
            ET.SubElement(case, "system-out").text = "\n".join(
                [record.get("reason") or "passed", *details])
    ET.indent(suites)
    text = ET.tostring(suites, "unicode")
    # ElementTree writes control characters as they are, which XML 1.0 forbids even escaped
    text = NOT_XML.sub(lambda match: f"\\x{ord(match.group()):02x}", text)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + text + "\n"


def _cell(text: Any) -> str:
    """Trace text in a table cell: it renders as itself (:func:`markdown_text`)."""
    return markdown_text(text if text is not None else "")


def markdown_summary(records: Sequence[dict[str, Any]], task: str) -> str:
    """A heading with the counts, then one table row per run (failures first)."""
    count = counts(records)
    lines = [f"### trustlayer: {markdown_text(task)}", "",
             f"**{count['passed']} passed, {count['failed']} failed** of {len(records)} runs "
             f"({count['product-bugs']} product bug, {count['agent-errors']} agent error)", "",
             "| run | verdict | coverage | cause | reason |",
             "| --- | --- | ---: | --- | --- |"]
    for record in sorted(records, key=lambda r: (r["verdict"] != "fail", r["run_id"])):
        verdict = "❌ fail" if record["verdict"] == "fail" else "✅ pass"
        lines.append(f"| {_cell(record['run_id'])} | {verdict} | {record['coverage']:.0%} | "
                     f"{_cell(record.get('cause') or '')} | {_cell(record.get('reason'))} |")
    return "\n".join(lines) + "\n"


def render(records: Sequence[dict[str, Any]], task: str, fmt: str,
           text_line: Callable[[dict[str, Any]], str]) -> str:
    """The verdicts in `fmt`: text, json (one JSON object a line), junit or markdown."""
    if fmt == "junit":
        return junit_xml(records, task)
    if fmt == "markdown":
        return markdown_summary(records, task)
    line = json.dumps if fmt == "json" else text_line
    return "".join(line(record) + "\n" for record in records)


def write(records: Sequence[dict[str, Any]], task: str, fmt: str, output: str | None,
          text_line: Callable[[dict[str, Any]], str]) -> None:
    """Write the verdicts to `output` (a file) or to standard output."""
    text = render(records, task, fmt, text_line)
    if output:
        Path(output).parent.mkdir(parents=True, exist_ok=True)
        Path(output).write_text(text, encoding="utf-8")
        print(f"{len(records)} verdicts ({fmt}) -> {output}", file=sys.stderr)
    else:
        sys.stdout.write(text)
