"""Core benchmarks, printed as ratios against limits measured in the same run.

    .venv/bin/python benchmarks/core.py [--quick] [TRACES_ROOT]

``--quick`` (the guard to run before and after a change to the judge, well under a minute):
the learn time of 32 runs and the judging table only.

1. learn time per dev set, and learn time against the number of runs (2 to 32: the
   successful runs of coding-dev, its eight training runs and the ten successful test
   runs, repeated under new run ids past the 18 there are; goal: 32 runs in under 1 s);
2. validation cost per screenshot frame / PNG decode cost per frame (goal <= 0.3);
3. judging cost per event (the matcher fed each test run of the dev sets, the real LLM
   agent's conversations of tau-airline-dev among them, and the stream benchmark's
   examples/jupyter runs: fingerprints, candidates, tiers, milestones)
   / json.loads of the same event's line, per task: the first pass, and the median of
   three more (the lines of a task's runs already seen, as in a running worker). Without
   ``--quick`` section 2 has judged jupyter-dev's test runs once already, so its first
   pass there is not a cold one (``--quick``'s is);
4. state lookup cost as the model grows from 10 to 10,000 states (BK-tree + inverted
   index), against a linear scan of the same states.
"""
from __future__ import annotations

import dataclasses
import gc
import io
import json
import random
import statistics
import sys
import time
from pathlib import Path

from goals import goal
from PIL import Image

from trustlayer.compare.index import StateIndex
from trustlayer.compare.visual import hamming
from trustlayer.judge.matcher import judge_run
from trustlayer.learn.learner import learn
from trustlayer.model import Model, ModelState
from trustlayer.observe.fingerprints import Fingerprint
from trustlayer.observe.templates import Profile
from trustlayer.observe.traces import load_labels, read_runs
from trustlayer.settings import Settings

REPO = Path(__file__).resolve().parents[1]
QUICK = "--quick" in sys.argv[1:]
_ROOTS = [arg for arg in sys.argv[1:] if arg != "--quick"]
ROOT = Path(_ROOTS[0]) if _ROOTS else REPO.parent / "shared" / "traces"
DEV_SETS = ("jupyter-dev", "datasette-dev", "coding-dev", "coding-dev2", "django-dev",
            "tau-airline-dev")


def bench_learn() -> dict[str, Model]:
    models = {}
    for name in ("jupyter-dev", "coding-dev"):
        runs = read_runs([ROOT / name / "train"])
        start = time.perf_counter()
        models[name] = learn(runs)
        print(f"learn {name}: {len(runs)} runs in {time.perf_counter() - start:.2f} s "
              f"({len(models[name].states)} states, {len(models[name].essential)} essential)")
    return models


def bench_learn_scaling(name: str = "coding-dev") -> None:
    labels = load_labels(ROOT / name / "test")
    base = read_runs([ROOT / name / "train"]) + [
        run for run in read_runs([ROOT / name / "test"])
        if labels[run.run_id]["outcome"] == "success"]
    times = {}
    for count in (2, 4, 8, 16, 32):
        runs = [dataclasses.replace(base[k % len(base)], run_id=f"{base[k % len(base)].run_id}-{k}")
                for k in range(count)]
        start = time.perf_counter()
        learn(runs)
        times[count] = time.perf_counter() - start
        print(f"learn {name} x{count:>2} runs ({min(count, len(base))} distinct): "
              f"{times[count]:6.2f} s ({times[count] / count:.3f} s per run, "
              f"{times[count] / times[2]:5.1f}x the 2-run time)")
    print(f"learn 32 runs: {times[32]:.2f} s {goal(times[32], '<=', 1, ' s')}")


def bench_validation(model: Model) -> None:
    runs = read_runs([ROOT / "jupyter-dev" / "test"])
    frames = [e.observation.screenshot.data for r in runs for e in r.states
              if e.observation.screenshot is not None]
    start = time.perf_counter()
    for data in frames:
        with Image.open(io.BytesIO(data)) as image:
            image.load()
    decode = (time.perf_counter() - start) / len(frames)
    runs = read_runs([ROOT / "jupyter-dev" / "test"])  # fresh, undecoded images
    gc.collect()  # (see bench_judging)
    start = time.perf_counter()
    for run in runs:
        judge_run(model, run)
    validate = (time.perf_counter() - start) / len(frames)
    print(f"validation per frame {validate * 1e3:.2f} ms / PNG decode per frame "
          f"{decode * 1e3:.2f} ms = {validate / decode:.2f} {goal(validate / decode, '<=', 0.3)}")


def _tasks(root: Path) -> list[Path]:
    """`root` if it holds train/ and test/, else its folders that do (one per task)."""
    if (root / "train").is_dir():
        return [root]
    return sorted(d for d in root.iterdir() if (d / "train").is_dir())


def _judging_entries() -> list[tuple[str, str, list[Path]]]:
    """(set, label, task folders) per row of the judging table: each task of the scripted
    sets, and one row for the conversations (one fold of each tau-airline-dev task, the
    one with most test runs: its folds repeat each task's runs)."""
    entries = [(name, task.name, [task]) for name in DEV_SETS if name != "tau-airline-dev"
               for task in _tasks(ROOT / name)]
    folds: dict[str, Path] = {}
    for fold in _tasks(ROOT / "tau-airline-dev") if (ROOT / "tau-airline-dev").is_dir() else []:
        key = fold.name.rsplit("-", 1)[0]
        if key not in folds or _count(fold) > _count(folds[key]):
            folds[key] = fold
    if folds:
        entries.append(("tau-airline-dev", "conversations", sorted(folds.values())))
    return entries + [("stream examples", "jupyter", [REPO / "examples" / "jupyter"])]


def _count(fold: Path) -> int:
    return len(list((fold / "test").glob("*.jsonl")))


def bench_judging() -> None:
    clock = time.process_time  # CPU time, interleaved: the machine may be shared
    judged = loaded = 0.0
    for name, label, folders in _judging_entries():
        models = {model.task: model for model in
                  (learn(read_runs([folder / "train"])) for folder in folders)}
        tests = [folder / "test" for folder in folders]
        lines = [line for folder in tests for path in sorted(folder.glob("*.jsonl"))
                 for line in path.read_text().splitlines() if line.strip()]
        passes = []
        for _ in range(4):
            runs = read_runs(tests)  # fresh: undecoded images, no fingerprints
            # what learning and reading left is collected now: a full collection of it
            # fell by chance inside one pass or another, and is not that pass's cost
            gc.collect()
            start = clock()
            for run in runs:
                judge_run(models[run.task], run)
            judge = clock() - start
            start = clock()
            for _ in range(3):
                for line in lines:
                    json.loads(line)
            passes.append((judge, (clock() - start) / 3))
        judge, loads = (statistics.median(times) for times in zip(*passes[1:]))
        judged, loaded = judged + judge, loaded + loads
        first = passes[0][0] / passes[0][1]
        print(f"judging {name} {label}: {judge / len(lines) * 1e6:4.0f} us per event / "
              f"json.loads {loads / len(lines) * 1e6:4.1f} us = {judge / loads:5.1f} "
              f"{goal(judge / loads, '<=', 5)} (first pass {first:5.1f})")
    print(f"judging per event / json.loads of the same event, all tasks: {judged / loaded:.1f} "
          f"{goal(judged / loaded, '<=', 5)}")


def synthetic_model(size: int, rng: random.Random) -> Model:
    states = {}
    for n in range(size):
        states[f"s{n}"] = ModelState(f"s{n}", f"S{n}", Profile([f"X|screen {n}"], [True]), True,
                                     phashes=[rng.getrandbits(64)])
    return Model(task="bench", version=1, states=states, edges=[], essential=[], soft=[],
                 negative=[], nearest_milestone={}, timing={}, training_runs=[],
                 settings=Settings())


def bench_lookup() -> None:
    rng = random.Random(7)
    base = None
    for size in (10, 100, 1_000, 10_000):
        model = synthetic_model(size, rng)
        index = StateIndex(model)
        queries = [Fingerprint(frozenset({f"X|screen {rng.randrange(size)}"}),
                               phash=rng.getrandbits(64)) for _ in range(200)]
        start = time.perf_counter()
        for fp in queries:
            index.candidates(fp)
        indexed = (time.perf_counter() - start) / len(queries)
        start = time.perf_counter()
        for fp in queries:
            [sid for sid, st in model.states.items()
             if min(hamming(fp.phash, h) for h in st.phashes) < model.settings.phash_different]
        scan = (time.perf_counter() - start) / len(queries)
        base = base or indexed
        print(f"lookup {size:>6} states: {indexed * 1e6:8.1f} us ({indexed / base:5.1f}x the "
              f"10-state cost; linear scan {scan * 1e6:8.1f} us, {scan / indexed:5.1f}x slower)")


if __name__ == "__main__":
    if QUICK:
        bench_learn_scaling()
        bench_judging()
    else:
        models = bench_learn()
        bench_learn_scaling()
        bench_validation(models["jupyter-dev"])
        bench_judging()
        bench_lookup()
