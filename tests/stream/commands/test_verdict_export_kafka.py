"""`trustlayer export-verdicts`: the final verdicts on a verdict topic of the real broker
reach an OTLP/HTTP receiver as `gen_ai.evaluation.result` events, one per run (progress
verdicts and a final verdict sent again are not exported)."""
from __future__ import annotations

import json
import subprocess
import sys

from otlp_receiver import Receiver
from streamkit import batch_verdicts, produce, unique

from stream.kafka.names import topic_names
from stream.kafka.topics import ensure_topics


def test_final_verdicts_on_the_topic_become_evaluation_events(kafka):
    prefix = unique("export")
    topics = topic_names(prefix)
    ensure_topics(kafka.bootstrap, topics)
    finals = [{**record, "final": True} for record in batch_verdicts().values()]
    progress = {**finals[0], "final": False, "verdict": "pending"}
    # the first final again (as after a worker's restart) before the others: sent twice,
    # it would use up the limit before the last run's verdict
    records = [progress, finals[0], finals[0], *finals[1:]]
    produce(kafka.bootstrap, topics.verdicts,
            [(r["run_id"].encode(), json.dumps(r).encode()) for r in records])
    receiver = Receiver()
    try:
        done = subprocess.run(
            [sys.executable, "-m", "trustlayer.cli", "export-verdicts", "--broker",
             kafka.bootstrap, "--topics", prefix, "--endpoint", receiver.url,
             "--group", unique("g"), "--limit", str(len(finals))],
            capture_output=True, text=True, timeout=120, check=False)
    finally:
        receiver.server.shutdown()
    assert done.returncode == 0, done.stderr[-2000:]
    events = receiver.events()
    assert len(receiver.records()) == len(finals) == len(events)
    for record in finals:
        attributes, event = events[record["run_id"]]
        assert event.event_name == "gen_ai.evaluation.result"
        assert attributes["gen_ai.evaluation.score.label"].string_value == record["verdict"]
        assert attributes["gen_ai.evaluation.score.value"].double_value == record["coverage"]
        assert attributes["trustlayer.task"].string_value == record["task"]
