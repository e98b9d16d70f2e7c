"""The Playwright example end to end on files: headless Chromium drives a local page, the
runs are written by the runner library, learned, and judged: the right run passes, a
wrong button is the agent's error, a failing API the product's. The README shows the
instrumentation the example runs."""
from __future__ import annotations

import json

from playwright_example import AGENT, CASES, readme_snippet, run_agent

from trustlayer.judge.matcher import judge_run
from trustlayer.learn.learner import learn
from trustlayer.observe.network import Response
from trustlayer.observe.traces import read_run, read_runs


def test_the_readme_shows_the_instrumentation_the_example_runs():
    snippet = readme_snippet()
    assert len([line for line in snippet.splitlines() if line.strip()]) <= 15
    assert snippet.split("def add_item", 1)[1] in AGENT.read_text(encoding="utf-8")


def test_runs_recorded_in_chromium_are_learned_and_judged(tmp_path):
    train = run_agent("--runs", str(tmp_path / "train"), count=3)
    model = learn(read_runs([tmp_path / "train"]))
    run = read_run(tmp_path / "train" / f"{train[0]}.jsonl")
    first, last = run.events[0].observation, run.states[-1].observation
    assert first.screenshot is not None and "Add" in first.a11y
    assert first.network == (Response("GET", "/", 200, "document"),)
    assert last.network == (Response("POST", "/api/items", 201, "fetch"),)
    assert "Saved buy milk" in last.text and last.title == "To-do"
    for name, options, verdict, cause in CASES:
        [run_id] = run_agent("--runs", str(tmp_path / name), *options)
        status = judge_run(model, read_run(tmp_path / name / f"{run_id}.jsonl"))
        record = status.to_json()
        assert (record["verdict"], record["cause"]) == (verdict, cause), json.dumps(record)
