"""`trustlayer validate --format junit|markdown -o FILE --fail-on ...` on real traces."""
from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET

import pytest
from devsets import EXAMPLES

from trustlayer.cli import main
from trustlayer.learn.learner import learn
from trustlayer.observe.traces import read_runs
from trustlayer.show.ci import failed, junit_xml, markdown_summary

JUPYTER = EXAMPLES / "jupyter"
PASSES, PRODUCT_BUG, AGENT_ERROR = (str(JUPYTER / "test" / f"jl-save-textfile-test-{n:02d}.jsonl")
                                    for n in (5, 11, 8))

TRICKY = [{"run_id": "r<1>&", "task": "t", "verdict": "fail", "coverage": 0.5,
           "reason": "'A | B' never reached: \"quoted\" <tag> & é", "cause": "agent_error",
           "missing": ["A | B"], "warnings": ["reached 'C' before 'A | B'"], "llm_calls": 0},
          {"run_id": "r2", "task": "t", "verdict": "pass", "coverage": 1.0,
           "reason": "every essential milestone reached", "cause": None, "missing": [],
           "warnings": [], "llm_calls": 0}]


def gfm_table(markdown: str) -> list[list[str]]:
    """The rows of the one GitHub-flavoured Markdown table in `markdown`, checked as a
    renderer would: a header, a delimiter row, every row with as many cells (unescaped
    pipes split cells)."""
    lines = [line for line in markdown.splitlines() if line.startswith("|")]
    assert lines, "no table"
    rows = [[cell.strip() for cell in re.split(r"(?<!\\)\|", line.strip())[1:-1]]
            for line in lines]
    assert all(re.fullmatch(r":?-{3,}:?", cell) for cell in rows[1]), rows[1]
    assert {len(row) for row in rows} == {len(rows[0])}, "ragged table"
    return [rows[0]] + rows[2:]


def test_junit_escapes_and_counts():
    root = ET.fromstring(junit_xml(TRICKY, "t").encode())
    assert root.tag == "testsuites" and root.get("tests") == "2" and root.get("failures") == "1"
    [suite] = root
    cases = suite.findall("testcase")
    assert [c.get("name") for c in cases] == ["r<1>&", "r2"]
    failure = cases[0].find("failure")
    assert failure.get("message") == TRICKY[0]["reason"] and failure.get("type") == "agent_error"
    assert "missing milestones: A | B" in failure.text
    assert cases[1].find("failure") is None


def test_markdown_is_one_table_with_pipes_escaped():
    rows = gfm_table(markdown_summary(TRICKY, "t"))
    assert rows[0] == ["run", "verdict", "coverage", "cause", "reason"]
    # HTML escaped: the cell renders as the run id, never as markup
    assert rows[1][0] == "r&lt;1&gt;&amp;" and "fail" in rows[1][1] and rows[1][3] == "agent_error"
    assert "A \\| B" in rows[1][4]
    assert "pass" in rows[2][1]


def test_fail_on():
    assert failed(TRICKY) == TRICKY[:1] and failed(TRICKY, "product_bug") == []
    with pytest.raises(ValueError):
        failed(TRICKY, "everything")


@pytest.fixture(scope="module")
def model_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("model") / "model.json"
    learn(read_runs([JUPYTER / "train"])).save(path)
    return str(path)


def test_validate_junit_on_real_runs(model_file, tmp_path, capsys):
    out = tmp_path / "results.xml"
    runs = [PASSES, PRODUCT_BUG, AGENT_ERROR]
    assert main(["-q", "validate", model_file, *runs, "--format", "junit", "-o", str(out)]) == 1
    assert capsys.readouterr().out == ""
    suite = ET.parse(out).getroot().find("testsuite")
    assert suite.get("name") == "jl-save-textfile" and suite.get("failures") == "2"
    main(["-q", "validate", model_file, *runs, "--format", "json"])
    reasons = {r["run_id"]: r for r in map(json.loads, capsys.readouterr().out.splitlines())}
    for case in suite.findall("testcase"):
        record = reasons[case.get("name")]
        failure = case.find("failure")
        if record["verdict"] == "fail":
            assert failure.get("message") == record["reason"]
            assert failure.get("type") == record["cause"]
        else:
            assert failure is None


def test_validate_markdown_and_fail_on_exit_codes(model_file, capsys):
    assert main(["-q", "validate", model_file, PASSES, AGENT_ERROR, "--format", "markdown",
                 "--fail-on", "product_bug"]) == 0
    rows = gfm_table(capsys.readouterr().out)
    assert len(rows) == 3 and "agent_error" in rows[1]
    assert main(["-q", "validate", model_file, PASSES, AGENT_ERROR]) == 1
    assert main(["-q", "validate", model_file, PRODUCT_BUG, "--fail-on", "product_bug"]) == 1
    assert main(["-q", "validate", model_file, PASSES, "--fail-on", "any"]) == 0
    capsys.readouterr()
