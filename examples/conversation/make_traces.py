"""Copy four runs of one real conversation task from the dev traces into this example.

The runs are GPT-4o's trials of tau-bench's airline task 34 (sierra-research/tau-bench,
MIT licence, see LICENSE-tau-bench), recorded in the trace format by the dev set
``../shared/traces/tau-airline-dev``: trials 0 and 1 (successes) train the model; trial 3
(a success) and trial 2 (a failure: it never cancelled one of the two reservations) are
the runs to judge. Run from the repository: ``.venv/bin/python
examples/conversation/make_traces.py``.
"""
import json
import shutil
from pathlib import Path

HERE = Path(__file__).resolve().parent
SOURCE = HERE.parents[1].parent / "shared" / "traces" / "tau-airline-dev" / "tau-airline-T34-all"
SPLIT = {"train": ("tau-airline-T34-trial0", "tau-airline-T34-trial1"),
         "test": ("tau-airline-T34-trial3", "tau-airline-T34-trial2")}
LABELS = {"tau-airline-T34-trial0": "success", "tau-airline-T34-trial1": "success",
          "tau-airline-T34-trial3": "success", "tau-airline-T34-trial2": "failure"}


def main() -> None:
    found = {path.stem: path for path in SOURCE.rglob("*.jsonl")}
    for folder, run_ids in SPLIT.items():
        target = HERE / folder
        target.mkdir(exist_ok=True)
        for run_id in run_ids:
            shutil.copy(found[run_id], target / f"{run_id}.jsonl")
        labels = {run_id: {"outcome": LABELS[run_id], "cause": None} for run_id in run_ids}
        (target / "labels.json").write_text(json.dumps(labels, indent=1) + "\n")
    shutil.copy(SOURCE.parent / "LICENSE-tau-bench", HERE / "LICENSE-tau-bench")


if __name__ == "__main__":
    main()
