"""The composite GitHub Action: its `run:` steps executed as a runner would (bash, inputs
and step outputs substituted, GITHUB_OUTPUT and GITHUB_STEP_SUMMARY files), in a fresh
virtualenv where the action's own install step installs trustlayer from a copy of the
source; the `uses:` steps (setup-python, upload-artifact) are GitHub's and only checked."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import venv
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import yaml
from devsets import REPO

ACTION = yaml.safe_load((REPO / "action.yml").read_text())
EXAMPLE = REPO / "examples" / "jupyter"
EXPRESSION = re.compile(r"\$\{\{\s*(.+?)\s*\}\}")


class Runner:
    """Runs the action's steps the way a GitHub runner does, in `workspace`."""

    def __init__(self, workspace: Path, action_path: Path, path: str):
        self.workspace, self.action_path, self.path = workspace, action_path, path
        self.outputs: dict[str, dict[str, str]] = {}
        self.summary = workspace / "step_summary.md"

    def expand(self, text: str, inputs: dict[str, str]) -> str:
        def value(match: re.Match) -> str:
            expression = match.group(1)
            if expression.startswith("inputs."):
                return inputs[expression.removeprefix("inputs.")]
            if expression == "github.action_path":
                return str(self.action_path)
            found = re.fullmatch(r"steps\.([\w-]+)\.outputs\.([\w-]+)", expression)
            if found:
                return self.outputs.get(found.group(1), {}).get(found.group(2), "")
            raise AssertionError(f"expression the test runner does not know: {expression}")
        return EXPRESSION.sub(value, text)

    def inputs(self, given: dict[str, str]) -> dict[str, str]:
        spec = ACTION["inputs"]
        assert set(given) <= set(spec), set(given) - set(spec)
        missing = [name for name, s in spec.items() if s.get("required") and name not in given]
        assert not missing, f"required inputs not given: {missing}"
        return {name: str(given.get(name, s.get("default", ""))) for name, s in spec.items()}

    def run(self, given: dict[str, str], skip: tuple[str, ...] = (),
            only: tuple[str, ...] | None = None) -> list[dict]:
        """Every step in order (or `only` those named); a step without `if: always()` is
        skipped after a failure."""
        inputs, failed, record = self.inputs(given), False, []
        for number, step in enumerate(ACTION["runs"]["steps"]):
            condition = step.get("if", "success()")
            assert condition in ("success()", "always()"), condition
            if (failed and condition == "success()") or step.get("name") in skip or \
                    (only is not None and step.get("name") not in only):
                continue
            if "uses" in step:
                record.append({"uses": step["uses"], "with": {
                    k: self.expand(str(v), inputs) for k, v in step.get("with", {}).items()}})
                continue
            assert step["shell"] == "bash"
            output = self.workspace / f"github_output_{number}"
            output.write_text("")
            env = {key: value for key, value in os.environ.items() if key != "VIRTUAL_ENV"}
            env.update(PATH=self.path, GITHUB_OUTPUT=str(output),
                       GITHUB_STEP_SUMMARY=str(self.summary), GITHUB_WORKSPACE=str(self.workspace))
            env.update({k: self.expand(str(v), inputs) for k, v in step.get("env", {}).items()})
            script = self.workspace / f"step_{number}.sh"
            script.write_text(self.expand(step["run"], inputs))
            done = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)],
                                  cwd=self.workspace, env=env, capture_output=True, text=True,
                                  timeout=300)
            if "id" in step:
                self.outputs[step["id"]] = dict(
                    line.split("=", 1) for line in output.read_text().splitlines() if "=" in line)
            failed = failed or done.returncode != 0
            record.append({"name": step["name"], "code": done.returncode, "out": done.stdout,
                           "err": done.stderr})
        return record


@pytest.fixture(scope="module")
def runner(tmp_path_factory) -> Runner:
    """A fresh virtualenv (pip and the project's dependencies visible through a .pth file,
    so nothing is downloaded but the build backend) in which the action's install step
    installs trustlayer from a copy of the action's source, as a checkout of the action would be."""
    base = tmp_path_factory.mktemp("action")
    source = base / "action-src"
    source.mkdir()
    for name in ("action.yml", "pyproject.toml", "README.md"):
        if (REPO / name).is_file():
            shutil.copy(REPO / name, source / name)
    (source / "README.md").touch()
    for package in ("trustlayer", "stream"):
        shutil.copytree(REPO / package, source / package,
                        ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    env_dir = base / "venv"
    venv.EnvBuilder(with_pip=False).create(env_dir)  # pip too comes through the .pth
    site = next((env_dir / "lib").glob("python3*/site-packages"))
    deps = [p for p in sys.path if p.endswith("site-packages")]
    (site / "project-deps.pth").write_text("\n".join(deps) + "\n")
    workspace = base / "workspace"
    workspace.mkdir()
    runner = Runner(workspace, source, f"{env_dir / 'bin'}{os.pathsep}{os.environ['PATH']}")
    [install] = runner.run({"model": "unused", "runs": "unused"}, only=("Install trustlayer",))
    assert install["code"] == 0, install["err"][-3000:]
    tool = env_dir / "bin" / "trustlayer"
    assert tool.is_file(), "the install step did not install the trustlayer command"
    learned = subprocess.run([str(tool), "-q", "learn", str(EXAMPLE / "train"), "-o",
                              str(workspace / "model.json")], capture_output=True, text=True)
    assert learned.returncode == 0, learned.stderr
    return runner


def run_action(runner: Runner, **inputs: str) -> dict[str, dict]:
    runner.summary.write_text("")
    steps = runner.run(inputs, skip=("Install trustlayer",))
    return {step.get("name") or step["uses"]: step for step in steps}


def test_fails_the_job_on_product_bugs_with_summary_junit_and_report(runner):
    steps = run_action(runner, model="model.json", runs=str(EXAMPLE / "test"))
    outputs = runner.outputs["validate"]
    assert outputs["exit-code"] == "1"
    summary = runner.summary.read_text()
    rows = [line for line in summary.splitlines() if line.startswith("| jl-save-textfile-test")]
    assert len(rows) == 6 and "product_bug" in summary and "fails on: product_bug" in summary
    counted = {"passed": sum("✅ pass" in row for row in rows),
               "failed": sum("❌ fail" in row for row in rows),
               "product-bugs": sum("| product_bug |" in row for row in rows),
               "agent-errors": sum("| agent_error |" in row for row in rows)}
    assert {name: int(outputs[name]) for name in counted} == counted
    assert counted["failed"] == counted["product-bugs"] + counted["agent-errors"] > 0
    final = steps["Fail on the failures asked for"]
    assert final["code"] == 1
    assert f"::error title=trustlayer::{counted['failed']} runs failed" in final["out"]
    cases = ET.parse(runner.workspace / "trustlayer-results.xml").getroot().iter("testcase")
    assert len(list(cases)) == 6
    report = (runner.workspace / "trustlayer-report.html").read_text()
    assert report.startswith("<!DOCTYPE html>") and ": expected and shown" in report
    upload = steps["actions/upload-artifact@v4"]["with"]
    assert upload["name"] == "trustlayer-report"
    for path in upload["path"].split():
        assert (runner.workspace / path).is_file(), path
    cache = steps["actions/cache@v4"]["with"]
    assert Path(cache["path"]).is_absolute() and cache["key"].startswith("trustlayer-pip-")


def test_agent_stumbles_are_reported_without_failing_the_job(runner):
    runs = " ".join(str(EXAMPLE / "test" / f"jl-save-textfile-test-{n}.jsonl")
                    for n in ("05", "08"))
    steps = run_action(runner, model="model.json", runs=runs, junit="out/results.xml",
                       train=str(EXAMPLE / "train"))
    report = (runner.workspace / "trustlayer-report.html").read_text()
    expected = report[report.index("<figcaption>expected: "):]
    assert re.match(r'</figcaption><a class="open" href="#[^"]+" title="[^"]+"><img alt=',
                    expected[expected.index("</figcaption>"):])  # a real screen, openable
    assert runner.outputs["validate"]["exit-code"] == "0"
    assert runner.outputs["validate"]["agent-errors"] == "1"
    assert steps["Fail on the failures asked for"]["code"] == 0
    summary = runner.summary.read_text()
    assert "agent_error" in summary and "1 failed" in summary
    assert ET.parse(runner.workspace / "out" / "results.xml").getroot().get("tests") == "2"
    with_any = run_action(runner, model="model.json", runs=runs, **{"fail-on": "any"})
    assert runner.outputs["validate"]["exit-code"] == "1"
    assert with_any["Fail on the failures asked for"]["code"] == 1


def test_bad_input_is_reported_as_bad_input_not_as_failed_runs(runner):
    steps = run_action(runner, model="no-such-model.json", runs=str(EXAMPLE / "test"))
    assert runner.outputs["validate"]["exit-code"] == "2"
    assert "model file not found" in steps["Validate the runs"]["err"]
    summary = runner.summary.read_text()
    assert "bad input, no run was judged" in summary and "model file not found" in summary
    final = steps["Fail on the failures asked for"]
    assert final["code"] == 2 and "::error title=trustlayer: bad input::" in final["out"]


def test_one_judgement_and_python_set_up_before_any_pip():
    steps = ACTION["runs"]["steps"]
    commands = [line.strip() for step in steps for line in step.get("run", "").splitlines()
                if line.strip().startswith("trustlayer ")]
    assert len(commands) == 1 and commands[0].startswith("trustlayer validate -q")
    setup = next(n for n, step in enumerate(steps) if step.get("uses", "").startswith(
        "actions/setup-python@"))
    first_pip = next(n for n, step in enumerate(steps) if "pip" in step.get("run", ""))
    assert setup < first_pip
    assert ACTION["outputs"]["product-bugs"]["value"] == \
        "${{ steps.validate.outputs.product-bugs }}"


def test_example_workflow_uses_the_action_as_declared():
    workflow = yaml.safe_load((REPO / "examples" / "github-actions" / "validate.yml").read_text())
    steps = [s for job in workflow["jobs"].values() for s in job["steps"]]
    [ours] = [s for s in steps if s.get("uses") == "./"]
    given = ours["with"]
    assert set(given) <= set(ACTION["inputs"])
    assert {n for n, s in ACTION["inputs"].items() if s.get("required")} <= set(given)
    assert given["fail-on"] in ("product_bug", "any")
    assert (REPO / given["runs"]).is_dir()
    learn = next(s for s in steps if "trustlayer -q learn" in s.get("run", ""))
    assert "examples/jupyter/train" in learn["run"] and given["model"] in learn["run"]
