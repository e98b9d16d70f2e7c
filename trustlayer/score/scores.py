"""Scores of verdicts against labels: failure is the positive class; among failures
caught, agent_error is the positive class of the cause score."""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any


def f1_score(tp: int, fp: int, fn: int) -> tuple[float, float, float]:
    """Precision, recall and F1 (0.0 where undefined).

    >>> f1_score(3, 1, 0)
    (0.75, 1.0, 0.8571)
    """
    precision = tp / (tp + fp) if tp + fp else 0.0
    recall = tp / (tp + fn) if tp + fn else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return round(precision, 4), round(recall, 4), round(f1, 4)


@dataclass
class Scores:
    """Confusion counts of one judge on one labelled set."""

    tp: int = 0
    fp: int = 0
    fn: int = 0
    tn: int = 0
    cause_tp: int = 0
    cause_fp: int = 0
    cause_fn: int = 0
    wrong: list[dict[str, Any]] = field(default_factory=list)

    def add(self, run_id: str, label: dict[str, Any], verdict: str, cause: str | None,
            reason: str | None) -> None:
        truth_fail, said_fail = label.get("outcome") == "failure", verdict == "fail"
        if truth_fail and said_fail:
            self.tp += 1
            truth_agent, said_agent = label.get("cause") == "agent_error", cause == "agent_error"
            self.cause_tp += truth_agent and said_agent
            self.cause_fp += said_agent and not truth_agent
            self.cause_fn += truth_agent and not said_agent
        elif said_fail:
            self.fp += 1
        elif truth_fail:
            self.fn += 1
        else:
            self.tn += 1
        if truth_fail != said_fail or (truth_fail and label.get("cause") != cause):
            self.wrong.append({"run_id": run_id, "truth": label.get("outcome"),
                               "truth_cause": label.get("cause"), "verdict": verdict,
                               "cause": cause, "reason": reason})

    def summary(self) -> dict[str, Any]:
        total = self.tp + self.fp + self.fn + self.tn
        precision, recall, f1 = f1_score(self.tp, self.fp, self.fn)
        return {"runs": total, "accuracy": round((self.tp + self.tn) / total, 4) if total else 0.0,
                "precision": precision, "recall": recall, "f1": f1,
                "cause_f1": f1_score(self.cause_tp, self.cause_fp, self.cause_fn)[2],
                "confusion": {"tp": self.tp, "fp": self.fp, "fn": self.fn, "tn": self.tn},
                "wrong": self.wrong}


def score(verdicts: Iterable[dict[str, Any]], labels: dict[str, dict[str, Any]]) -> Scores:
    """Score verdict dicts (run_id, verdict, cause, reason) against `labels`."""
    scores = Scores()
    for verdict in verdicts:
        label = labels.get(verdict["run_id"])
        if label is not None:
            scores.add(verdict["run_id"], label, verdict["verdict"], verdict.get("cause"),
                       verdict.get("reason"))
    return scores
