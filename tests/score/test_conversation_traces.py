"""A real LLM agent's conversations (../shared/traces/tau-airline-dev: GPT-4o's runs of
tau-bench's airline tasks, labelled by the benchmark's database oracle): judged by what the
runs changed and told, no failed run passes, also when no tool says whether it only reads."""
from __future__ import annotations

import dataclasses
from pathlib import Path

from devsets import DEVTRACES, SHARED

from trustlayer.judge.matcher import judge_run
from trustlayer.learn.learner import learn
from trustlayer.observe.trace_events import Run
from trustlayer.observe.traces import load_labels, read_runs

pytestmark = DEVTRACES
TAU = SHARED / "tau-airline-dev"
MAX_FALSE_FAILURES = 2  # of the set's 38 successes (issue "Judgement III": 2 of 38)


def _without_read_only(run: Run) -> Run:
    events = [dataclasses.replace(e, action=dataclasses.replace(e.action, read_only=None))
              if e.action is not None else e for e in run.events]
    return dataclasses.replace(run, events=events)


def _verdicts(strip: bool) -> list[tuple[str, str, str]]:
    """(run id, label, verdict) of every fold's test run, models from its train runs."""
    found = []
    for fold in sorted(path for path in TAU.iterdir() if (path / "train").is_dir()):
        train, test = (read_runs([fold / part]) for part in ("train", "test"))
        if strip:
            train, test = [_without_read_only(r) for r in train], \
                [_without_read_only(r) for r in test]
        model = learn(train)
        labels = load_labels(Path(fold / "test"))
        found += [(run.run_id, labels[run.run_id]["outcome"], judge_run(model, run).status)
                  for run in test]
    return found


def test_no_failed_conversation_passes_and_few_successes_fail():
    verdicts = _verdicts(strip=False)
    false_passes = [r for r, label, status in verdicts if label == "failure" and status == "passed"]
    false_failures = [r for r, label, status in verdicts
                      if label == "success" and status != "passed"]
    assert false_passes == []
    assert len(false_failures) <= MAX_FALSE_FAILURES, false_failures


def test_a_tool_of_unknown_effect_passes_no_failed_conversation():
    verdicts = _verdicts(strip=True)
    assert [r for r, label, status in verdicts if label == "failure" and status == "passed"] == []
