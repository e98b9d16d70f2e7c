"""Runs for the worker tests against Kafka, and the check of the final verdicts they get:
:func:`copies` of the example test runs under new ids, their :func:`halves`, and
:func:`check_finals`."""
from __future__ import annotations

import json

from streamkit import batch_verdicts, example_events, final_by_run, interleave, renamed

#: Reasons of the final verdicts the worker's timer makes (not the batch validator's)
TIMER_REASONS = ("not reached within", "lasted", "events missing")


def copies(n: int, prefix: str) -> list[list[dict]]:
    """`n` copies of every example test run, with new run ids."""
    return [renamed(run, f"{prefix}-{k}-{run[0]['run_id']}")
            for k in range(n) for run in example_events()]


def halves(runs: list[list[dict]]) -> tuple[list[dict], list[dict]]:
    first = interleave([run[:len(run) // 2] for run in runs])
    second = interleave([run[len(run) // 2:] for run in runs])
    return first, second


def check_finals(values: list[dict], runs: list[list[dict]], excuse_timer: bool = True) -> None:
    """Every run has one final verdict (re-sent ones identical); those not made by the timer
    (all of them unless `excuse_timer`) equal the batch validator's."""
    distinct = final_by_run(values)
    wanted = {run[0]["run_id"] for run in runs}
    assert set(distinct) == wanted, wanted - set(distinct)
    for run_id, records in distinct.items():
        assert len(records) == 1, f"{run_id}: {len(records)} different final verdicts:\n" + \
            "\n".join(records)
        record = json.loads(next(iter(records)))
        original = next(r[0]["run_id"] for r in example_events() if run_id.endswith(r[0]["run_id"]))
        if not excuse_timer or not any(why in (record["reason"] or "") for why in TIMER_REASONS):
            expected = batch_verdicts()[original]
            got = (record["verdict"], record["reason"], record["cause"])
            batch = (expected["verdict"], expected["reason"], expected["cause"])
            assert got == batch, f"{run_id}: {got} != {batch}"
