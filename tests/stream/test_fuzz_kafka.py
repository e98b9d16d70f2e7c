"""Fuzz: over 500 hostile records through a real worker on the real broker, interleaved with
good runs. Every hostile record goes to the DLQ with a reason or is judged (its run gets a
verdict), the worker logs no traceback and never restarts, and every good run gets the
batch validator's verdict. Run alone with ``-s`` to see the figures."""
from __future__ import annotations

import asyncio
import json
import random
from collections import Counter

from hostile import mutate_record
from streamkit import (
    TEST,
    Worker,
    all_final,
    batch_verdicts,
    example_events,
    produce,
    renamed,
    setup,
    unique,
)

from stream.commands.replay import read_events
from stream.deadletter import REASONS
from stream.kafka import clients
from stream.kafka.clients import MAX_MESSAGE_BYTES

MUTATED, AFTER_END, WRONG_TASK, DUPLICATES, GIANT = 480, 40, 20, 30, 4


def hostile_plan(good: list[list[dict]], prefix: str, rng: random.Random):
    """The records to publish in order (key, value) and, for the hostile ones, what each is:
    ``("mutated", run_id)`` (a run of its own), ``("after_end", run_id)``,
    ``("wrong_task", run_id)``, ``("duplicate", run_id)`` or ``("giant", run_id)`` (a
    valid event of 6 MB or of the topic's limit, a run of its own)."""
    shapes = [e for run in read_events([TEST], "fingerprint") for e in run]
    inline = [e for run in example_events() for e in run if e["kind"] == "state"]
    mixed = []
    for number in range(MUTATED):  # every one a run of its own, from an inline screenshot
        base = rng.choice(inline if number % 20 == 0 else shapes)  # now and then
        run_id = f"{prefix}-fz{number}"
        mixed.append(((run_id.encode(), mutate_record({**base, "run_id": run_id}, rng)),
                      ("mutated", run_id)))
    stream = [(e["run_id"].encode(), json.dumps(e).encode()) for run in good for e in run]
    for number in range(GIANT):  # megabytes of text on one screen, read at once or held
        event = {**rng.choice(inline), "run_id": f"{prefix}-giant{number}",
                 "seq": 0 if number % 4 < 2 else 1, "observation": {"text": ""}}
        room = MAX_MESSAGE_BYTES - len(json.dumps(event)) - 200  # as long as an event may be
        event["observation"]["text"] = ["x" * 6_000_000, "x" * room, "word " * 1_200_000,
                                        "word " * (room // 5)][number % 4]
        mixed.append(((event["run_id"].encode(), json.dumps(event).encode()),
                      ("giant", event["run_id"])))
    for _ in range(WRONG_TASK):
        event = {**rng.choice(rng.choice(good)), "task": "another-task"}
        mixed.append(((event["run_id"].encode(), json.dumps(event).encode()),
                      ("wrong_task", event["run_id"])))
    order: list[tuple[tuple[bytes, bytes], tuple[str, str] | None]] = [(r, None) for r in stream]
    for item in mixed:  # hostile records anywhere among the good runs' events
        order.insert(rng.randrange(len(order) + 1), item)
    for _ in range(DUPLICATES):  # a redelivery: anywhere after the record it repeats (a
        # copy before it would be an early event, held while the run's gap lasts, and
        # failed as 'events missing' if the producer took longer than --reorder-timeout)
        record = rng.choice(stream)
        after = next(i for i, (r, kind) in enumerate(order) if r is record and kind is None)
        order.insert(rng.randrange(after + 1, len(order) + 1),
                     (record, ("duplicate", record[0].decode())))
    for _ in range(AFTER_END):  # after every good event: after its run's end
        run = rng.choice(good)
        end = run[-1]
        event = {**rng.choice(run), "seq": end["seq"] + 1 + rng.randrange(3)}
        if rng.random() < 0.5:
            event = {**end, "seq": end["seq"] + 1, "outcome": rng.choice(["success", "failure"])}
        order.append(((event["run_id"].encode(), json.dumps(event).encode()),
                      ("after_end", event["run_id"])))
    return order


def collect(bootstrap: str, topics: list[str], until, timeout: float) -> dict[str, list[dict]]:
    """The JSON values of `topics` from their start, read until `until(values by topic)` or
    `timeout` seconds."""
    async def run() -> dict[str, list[dict]]:
        consumer = clients.consumer(bootstrap, *topics, auto_offset_reset="earliest")
        await consumer.start()
        values: dict[str, list[dict]] = {topic: [] for topic in topics}
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        try:
            while loop.time() < deadline and not until(values):
                for tp, records in (await consumer.getmany(timeout_ms=200)).items():
                    values[tp.topic] += [json.loads(r.value) for r in records]
        finally:
            await consumer.stop()
        return values

    return asyncio.run(run())


def original(run_id: str) -> str:
    """The example run a good run copies (``PREFIX-goodK-ORIGINAL``)."""
    return run_id.split("-good", 1)[1].split("-", 1)[1]


def test_hostile_records_go_to_the_dlq_or_are_judged_and_good_runs_are_unharmed(kafka,
                                                                                tmp_path):
    prefix, topics, models = setup(kafka, tmp_path)
    rng = random.Random(2026)
    good = [renamed(run, f"{prefix}-good{k}-{run[0]['run_id']}")
            for k in range(2) for run in read_events([TEST], "fingerprint")]
    order = hostile_plan(good, prefix, rng)
    kinds = [kind for _, kind in order if kind is not None]
    hostile = Counter(kind for kind, _ in kinds)
    mutated = {run_id for kind, run_id in kinds if kind in ("mutated", "giant")}
    assert sum(hostile.values()) >= 500

    def settled(values: dict[str, list[dict]]) -> bool:
        dead, verdicts = values[topics.dlq], values[topics.verdicts]
        return (all_final(good)(verdicts)
                and sum(d["reason"] == "after_end" for d in dead) >= hostile["after_end"]
                and mutated <= {v["run_id"] for v in verdicts} | {d["key"] for d in dead})

    worker = Worker(kafka.bootstrap, prefix, unique("fuzz"), models, tmp_path / "w.log",
                    "--reorder-timeout", "3", "--no-refine")
    try:
        worker.wait_ready()
        produce(kafka.bootstrap, topics.events, [record for record, _ in order])
        values = collect(kafka.bootstrap, [topics.dlq, topics.verdicts], settled, timeout=120)
        alive = worker.process.proc.poll() is None and len(worker.ready_lines()) == 1
    finally:
        worker.stop()
    dead, verdicts = values[topics.dlq], values[topics.verdicts]
    log = worker.log.read_text(errors="replace")
    reasons = Counter(d["reason"] for d in dead)
    judged, refused = {v["run_id"] for v in verdicts}, {d["key"] for d in dead}
    finals: dict[str, set] = {}
    for record in verdicts:
        if record["final"]:
            finals.setdefault(record["run_id"], set()).add(
                (record["verdict"], record["reason"], record["cause"]))
    batch = {rid: {(r["verdict"], r["reason"], r["cause"])} for rid, r in batch_verdicts().items()}
    right = [run[0]["run_id"] for run in good
             if finals.get(run[0]["run_id"]) == batch[original(run[0]["run_id"])]]
    print(f"\nhostile records sent: {sum(hostile.values())} {dict(hostile)}, "
          f"among {len(good)} good runs")
    print(f"DLQ records: {len(dead)}, by reason {dict(reasons.most_common())}")
    print(f"mutated records judged as events: {len(mutated & judged - refused)}, "
          f"refused to the DLQ: {len(mutated & refused)}, neither: "
          f"{len(mutated - judged - refused)}")
    print(f"tracebacks in the worker log: {log.count('Traceback')}; worker restarts: "
          f"{len(worker.ready_lines()) - 1}; good runs with the batch verdict: "
          f"{len(right)}/{len(good)}")
    assert settled(values), worker.log_tail()
    assert alive, worker.log_tail()
    assert log.count("Traceback") == 0, worker.log_tail(20000)
    assert set(reasons) <= set(REASONS) and all(d["error"] for d in dead)
    assert reasons["after_end"] == hostile["after_end"]
    good_ids = {run[0]["run_id"] for run in good}
    other_task = [d for d in dead if d["key"] in good_ids and d["reason"] != "after_end"]
    assert len(other_task) == hostile["wrong_task"]  # no_model before the run's first event
    assert {d["reason"] for d in other_task} <= {"wrong_task", "no_model"}
    assert len(right) == len(good), sorted(set(r[0]["run_id"] for r in good) - set(right))
