"""The batch validator over trace files: every run under some paths judged with
:func:`~trustlayer.judge.matcher.judge_run` (``trustlayer validate``, ``trustlayer score``)."""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from trustlayer.compare.llm import judge_for
from trustlayer.inputs import progress, task_runs
from trustlayer.judge.matcher import judge_run
from trustlayer.judge.status import VALIDATE_FIELDS
from trustlayer.model import Model


def judge_paths(model: Model, paths: Sequence[str], quiet: bool) -> list[dict[str, Any]]:
    """Verdict records for every run under `paths` (each checked to be of the model's
    task), with the LLM tier when the model enables it."""
    llm = judge_for(model.settings.llm)
    runs = task_runs(model, paths, quiet)
    return [judge_run(model, run, llm).to_json(VALIDATE_FIELDS)
            for run in progress(runs, "validating", quiet)]
