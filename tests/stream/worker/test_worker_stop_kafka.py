"""A worker whose broker is gone still stops on SIGTERM (a broker of its own, killed under
it): it ends within its bounded stop, saying what it could not commit."""
from __future__ import annotations

import signal

from streamkit import (
    Worker,
    all_seen,
    await_topic,
    example_events,
    publish_events,
    renamed,
    setup,
    unique,
)

from stream.kafka.broker import EmbeddedKafka
from stream.worker.supervise import STOPPED_HARD


def test_a_worker_stops_on_sigterm_when_its_broker_is_gone(tmp_path):
    with EmbeddedKafka() as kafka:
        prefix, topics, models = setup(kafka, tmp_path)
        open_runs = [renamed(run, f"{prefix}-open{k}")[:3]
                     for k, run in enumerate(example_events())]
        worker = Worker(kafka.bootstrap, prefix, unique("stop"), models, tmp_path / "w.log")
        try:
            worker.wait_ready()
            publish_events(kafka.bootstrap, topics.events, [e for run in open_runs for e in run])
            await_topic(kafka.bootstrap, topics.verdicts, all_seen(open_runs), worker)
            kafka.kill()
            worker.process.proc.send_signal(signal.SIGTERM)
            # a guard, not a measure: the worker used to ignore SIGTERM for minutes
            code = worker.process.proc.wait(timeout=90)
        finally:
            worker.stop()
    log = worker.log_tail(20000)
    assert code in (0, STOPPED_HARD), log
    if code == STOPPED_HARD:  # its shutdown waited for the broker: killed, and said so
        assert "could not commit what it judged since its last commit" in log
