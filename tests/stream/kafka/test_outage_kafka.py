"""A broker outage does not count as runs' silence: quiet runs are failed on their
deadlines counted from the broker's return, not at once when it comes back (a broker of
its own, killed and restarted on its data)."""
from __future__ import annotations

import time

from streamkit import (
    TIMER_END_SILENCE,
    TIMER_FLOOR,
    Worker,
    all_final,
    all_seen,
    await_topic,
    example_events,
    publish_events,
    renamed,
    setup,
    unique,
)

from stream.kafka.broker import EmbeddedKafka

OUTAGE = TIMER_END_SILENCE + 5.0  # longer than every deadline and the end silence


def test_quiet_runs_are_not_failed_for_the_time_the_broker_was_away(tmp_path):
    with EmbeddedKafka() as kafka:
        prefix, topics, models = setup(kafka, tmp_path, TIMER_FLOOR)
        quiet = [renamed(run, f"{prefix}-quiet{k}")[:3] for k, run in enumerate(example_events())]
        worker = Worker(kafka.bootstrap, prefix, unique("outage"), models, tmp_path / "w.log",
                        "--end-silence", str(TIMER_END_SILENCE))
        try:
            worker.wait_ready()
            publish_events(kafka.bootstrap, topics.events, [e for run in quiet for e in run])
            await_topic(kafka.bootstrap, topics.verdicts, all_seen(quiet), worker, timeout=60)
            kafka.kill()
            time.sleep(OUTAGE)
            kafka.restart()
            back = time.time()
            values = await_topic(kafka.bootstrap, topics.verdicts, all_final(quiet), worker,
                                 timeout=180)
            read = time.time()
        finally:
            worker.stop()
    finals = [v for v in values if v["final"]]
    assert {v["run_id"] for v in finals} == {run[0]["run_id"] for run in quiet}
    for record in finals:
        assert "not reached within" in record["reason"] or "lasted" in record["reason"]
        # the silence the run's clock counted began after the broker came back
        counted = record["verdict_ts"] - record["event_ts"]
        assert counted <= read - back, (record["run_id"], counted, read - back)
