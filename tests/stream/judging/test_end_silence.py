"""Every run gets a final verdict: one whose end never comes is finalised as ``incomplete``
(its last status and reason kept) after a silence learned from its model or configured, and
never while its partition is behind."""
from __future__ import annotations

from streamkit import as_records, example_events, finals, model, processor, renamed

from stream.judging.silence import learned_silence

PUB = 1_000_000.0


def without_end(run_id: str) -> list[dict]:
    [run] = [run for run in example_events() if run[0]["run_id"] == "jl-save-textfile-test-05"]
    return renamed(run[:-1], run_id)


def test_the_learned_silence_comes_from_the_models_durations_with_a_floor():
    longest = max(stats["bound"] for durations in model().timing.values()
                  for stats in durations.values())
    assert learned_silence(model()) == max(30.0, model().settings.deadline_factor * longest)
    assert learned_silence(model()) >= 30.0


def test_a_run_without_its_end_is_finalised_as_incomplete_with_its_last_status():
    proc = processor(deadlines=False)
    events = without_end("open")
    out = proc.process_batch(as_records(events, pub=PUB))
    [last] = [record for _, record in out.verdicts][-1:]
    assert not last["final"] and last["status"] == "passed"  # it reached its last state
    silence = learned_silence(model())
    assert proc.silence.tick(PUB).verdicts == []  # the worker's first tick with the partition
    assert proc.silence.tick(PUB + silence - 1).verdicts == []
    assert proc.silence.tick(PUB + silence + 1, caught_up=lambda partition: False).verdicts == []
    [(run_id, final)] = proc.silence.tick(PUB + silence + 1).verdicts
    assert (run_id, final["verdict"], final["status"], final["final"]) == \
        ("open", "incomplete", "incomplete", True)
    assert final["reason"].startswith(f"no end event for {silence + 1:.0f} s after seq "
                                      f"{len(events) - 1} (last status passed")
    assert (final["code"], final["details"]) == ("no_end", final["reason"])
    # its end coming late changes nothing, and it is not learned from
    end = renamed([e for e in example_events()[0] if e["kind"] == "end"], "open")[0]
    late = proc.process_batch(as_records([{**end, "seq": len(events)}], len(events), pub=PUB))
    assert finals(late.verdicts) == {} and late.finished == []


def test_the_silence_can_be_configured():
    proc = processor(end_silence=5.0)
    proc.process_batch(as_records(without_end("short"), pub=PUB))
    assert proc.silence.tick(PUB).verdicts == proc.silence.tick(PUB + 4).verdicts == []
    [(_, final)] = proc.silence.tick(PUB + 6).verdicts
    assert final["verdict"] == "incomplete"
