"""Streaming benchmarks on the embedded Kafka 4.4, printed as ratios against limits
measured in the same run (nothing asserted).

    .venv/bin/python benchmarks/stream_throughput.py [--events N] [--rate R] [--seconds S]
                                                      [--warmup S] [--rounds K]

1. throughput on text/a11y events (screenshots stripped), published beforehand: the worker
   (``trustlayer worker``, refinement off) ÷ a do-nothing Faust agent (same broker, topic,
   events and batching: what Faust's own delivery costs; the worker takes fetches past it,
   see stream/kafka/clients.py; goal >= 1.0) and ÷ a plain aiokafka loop that json-decodes
   each event and produces one small record (goal >= 0.5); two workers in one group
   (measured once they share the partitions, over four times the events) ÷ one worker
   (goal >= 1.8), with the CPU each worker used and the CPU the machine left idle, and the
   same per CPU-second of the workers (on a machine with no core idle the plain ratio
   counts the cores the workers got); the CPU each of the three single-process ones spends
   on an event; the three are measured ``--rounds`` times in turn (default 3), and their
   ratios are the medians (this host's speed drifts from one minute to the next);
2. in the worker's processor, no broker (``processor_costs.py``): a text/a11y event in
   batches of 500 (each run written once a batch), and one whose run is written to the
   table after every event (a fleet sending about one event per run between checkpoints),
   in us and ÷ ``json.loads`` of it; per-screenshot-event cost (data URI decode, checks,
   fingerprint, match) ÷ PNG decode cost of the same frames (goal <= 0.5), and the same for
   events whose screenshots the runner fingerprinted (``trustlayer replay --fingerprint``);
3. p50/p99 publish -> verdict latency at a fixed offered load (default 500 events/s; goal
   p99 <= 20 ms), with one worker and with two workers in one group, each after a warm-up
   at the same load (timed apart: a fresh broker's JIT is still compiling meanwhile).

The runs are the repo's examples/jupyter test runs, copied under new run ids. Each phase
prints the CPU the hypervisor took meanwhile (steal): on a shared VM it moves the figures
more than the code does.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import uuid
from pathlib import Path
from typing import NamedTuple

# the benchmark modules put the repository on sys.path for the imports below them
from goals import goal
from processor_costs import report
from stream_measures import (
    FLEET_AGENTS,
    broker_latency,
    latency,
    nothing_throughput,
    plain_loop,
    worker_throughput,
)
from stream_workloads import EXAMPLES, PARTITIONS, copies, produce, steal_during, text_only

from stream.commands.replay import read_events
from stream.commands.replay import round_robin as interleave
from stream.kafka.broker import EmbeddedKafka
from stream.kafka.names import topic_names
from stream.kafka.processes import stopped_as_by_ctrl_c
from stream.kafka.topics import ensure_topics
from trustlayer.learn.learner import learn
from trustlayer.observe.event_parsing import run_of_events


class Rate(NamedTuple):
    """Events/s of one process, the CPU it used and the CPU the hypervisor took (s/s)."""

    events: float
    cpu: float
    steal: float

    @property
    def us_per_event(self) -> float:
        return self.cpu / self.events * 1e6


class Round(NamedTuple):
    """The worker's, the do-nothing agent's and the plain loop's rates over the same events,
    and the broker's CPU and the machine's idle during the worker's (s/s)."""

    worker: Rate
    nothing: Rate
    plain: Rate
    broker: float
    idle: float


def one_round(kafka: EmbeddedKafka, models: Path, events: list[dict], work: Path) -> Round:
    """A :class:`Round` over `events`, published anew for each of the three."""
    (worker, (cpu, broker, idle)), steal = steal_during(
        lambda: worker_throughput(kafka, models, events, 1, work))
    topics = topic_names(f"raw-{uuid.uuid4().hex[:6]}")
    ensure_topics(kafka.bootstrap, topics, PARTITIONS)
    asyncio.run(produce(kafka.bootstrap, topics.events, events))
    (nothing, nothing_cpu), nothing_steal = steal_during(
        lambda: nothing_throughput(kafka, topics.events, len(events), work))
    (plain, plain_cpu), plain_steal = steal_during(lambda: asyncio.run(
        plain_loop(kafka.bootstrap, topics.events, topics.verdicts, len(events))))
    return Round(Rate(worker, cpu, steal), Rate(nothing, nothing_cpu, nothing_steal),
                 Rate(plain, plain_cpu, plain_steal), broker, idle)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=20000, help="events in the throughput runs")
    parser.add_argument("--rate", type=float, default=500.0, help="offered load for latency")
    parser.add_argument("--seconds", type=float, default=30.0,
                        help="length of the latency runs (the p99 of shorter ones is noisy)")
    parser.add_argument("--warmup", type=float, default=60.0,
                        help="seconds of the same load before each latency run (timed apart)")
    parser.add_argument("--rounds", type=int, default=3,
                        help="rounds of the one-process throughputs (the ratios: their medians)")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="trustlayer-bench-"))

    train = [[text_only(e) for e in run] for run in read_events([EXAMPLES / "train"], "path")]
    test = [[text_only(e) for e in run] for run in read_events([EXAMPLES / "test"], "path")]
    model = learn([run_of_events(r) for r in train])
    models = work / "models"
    models.mkdir()
    model.save(models / f"{model.task}.json")
    per_run = statistics.mean(len(r) for r in test)
    many = copies(test, int(args.events / per_run) + 1, "t")
    events = interleave(many)
    size = statistics.mean(len(json.dumps(e)) for e in events)
    print(f"workload: {len(events)} text/a11y events of {len(many)} runs, {size / 1024:.1f} KB "
          f"per event on average; machine: {os.cpu_count()} cores")

    with EmbeddedKafka(log_level="WARN") as kafka:
        print(f"Kafka 4.4 at {kafka.bootstrap} (started in {kafka.startup_seconds:.1f} s)")
        rounds = [one_round(kafka, models, events, work) for _ in range(args.rounds)]
        # four times the events: the first worker judges alone until the second one joins
        backlog = interleave(copies(test, 4 * len(many), "u"))
        (worker_2, (*cpu_2, broker_2, idle_2)), steal_2 = steal_during(
            lambda: worker_throughput(kafka, models, backlog, 2, work))
        print(f"\n1. throughput, text/a11y events ({PARTITIONS} partitions; steal: the CPU the "
              f"hypervisor took during each phase, s/s)")
        for number, (worker, nothing, plain, broker, idle) in enumerate(rounds, 1):
            if len(rounds) > 1:
                print(f"   round {number} of {len(rounds)}")
            print(f"   worker (1 process)          {worker.events:7.0f} events/s, CPU "
                  f"{worker.cpu:.2f} s/s (broker {broker:.2f}, machine idle {idle:.2f}), "
                  f"steal {worker.steal:.2f}")
            print(f"   do-nothing Faust agent      {nothing.events:7.0f} events/s, CPU "
                  f"{nothing.cpu:.2f} s/s, steal {nothing.steal:.2f}")
            print(f"   plain aiokafka loop         {plain.events:7.0f} events/s, CPU "
                  f"{plain.cpu:.2f} s/s (json-decodes each event, produces one small record), "
                  f"steal {plain.steal:.2f}")
            # each of the three uses about a core: the ratios below are then those of the
            # CPU each spends on an event, which this line says
            print(f"   CPU per event: worker {worker.us_per_event:.0f} us, do-nothing agent "
                  f"{nothing.us_per_event:.0f} us, plain loop {plain.us_per_event:.0f} us")
        # the host's speed drifts between phases (docs/benchmarks.md): with several rounds
        # the ratios are their medians
        of = f" (median of {len(rounds)} rounds)" if len(rounds) > 1 else ""
        to_nothing = statistics.median(r.worker.events / r.nothing.events for r in rounds)
        to_plain = statistics.median(r.worker.events / r.plain.events for r in rounds)
        worker_1 = statistics.median(r.worker.events for r in rounds)
        per_cpu_1 = statistics.median(r.worker.events / r.worker.cpu for r in rounds)
        print(f"   worker / do-nothing agent    = {to_nothing:.2f}  {goal(to_nothing, '>=', 1.0)}"
              f"{of}")
        print(f"   worker / plain aiokafka loop = {to_plain:.3f} {goal(to_plain, '>=', 0.5)}{of}")
        print(f"   2 workers                   {worker_2:7.0f} events/s, {worker_2 / 2:.0f} per "
              f"worker, CPU {' + '.join(f'{c:.2f}' for c in cpu_2)} s/s (broker "
              f"{broker_2:.2f}, machine idle {idle_2:.2f}), steal {steal_2:.2f}; "
              f"2 workers / 1 worker = {worker_2 / worker_1:.2f} ({os.cpu_count()} cores) "
              f"{goal(worker_2 / worker_1, '>=', 1.8)}")
        # with no core idle the ratio above counts the cores the workers got, not how the
        # worker scales: two that wait for each other (a lock, the broker) leave CPU idle,
        # and two that do more per event (events judged twice) judge fewer per CPU-second
        print(f"   events per worker CPU-second, 2 workers / 1 worker = "
              f"{worker_2 / sum(cpu_2) / per_cpu_1:.2f} (1.00: no work added by sharing)")

        print("\n2. in the worker's processor, no broker")
        for line in report(model, test):
            print(f"   {line}")

        n_runs = max(1, int(args.rate * args.seconds / per_run))
        n_warm = max(1, int(args.rate * args.warmup / per_run))
        total = sum(len(test[k % len(test)]) for k in range(n_runs))
        print(f"\n3. publish -> verdict latency at {args.rate:.0f} events/s offered "
              f"({total} events, {n_runs} runs from a fleet of {FLEET_AGENTS} runners, "
              f"{total / args.rate:.0f} s, after {args.warmup:.0f} s of the same load to warm up)")
        for workers in (1, 2):
            tag = uuid.uuid4().hex[:4]
            warm, steady = latency(kafka, models, copies(test, n_runs, f"l{tag}"), args.rate,
                                   workers, work, warmup=copies(test, n_warm, f"w{tag}"))
            print(f"   {workers} worker{'s' if workers > 1 else ' '}: p50 {steady.p50:6.1f} ms  "
                  f"p99 {steady.p99:6.1f} ms  ({steady.count} verdicts) "
                  f"{goal(steady.p99, '<=', 20, ' ms')}")
            print(f"      CPU meanwhile (s/s, {os.cpu_count()} cores): workers "
                  f"{steady.cpu['workers']:.2f}, broker {steady.cpu['broker']:.2f}, fleet and "
                  f"verdict reader {steady.cpu['benchmark']:.2f}; taken by the hypervisor "
                  f"(steal) {steady.cpu['steal']:.2f}")
            print(f"      warm-up: p50 {warm.p50:6.1f} ms  p99 {warm.p99:6.1f} ms  ({warm.count} "
                  f"verdicts), CPU workers {warm.cpu['workers']:.2f}, broker "
                  f"{warm.cpu['broker']:.2f}, steal {warm.cpu['steal']:.2f}")
        hop = broker_latency(kafka, copies(test, n_runs, f"h{tag}"), args.rate)
        print(f"   no worker: p50 {hop.p50:6.1f} ms  p99 {hop.p99:6.1f} ms  ({hop.count} events "
              f"received by a plain consumer: the broker and this machine alone, one hop of a "
              f"verdict's two; steal {hop.cpu['steal']:.2f})")
    return 0


if __name__ == "__main__":
    with stopped_as_by_ctrl_c():  # a killed benchmark stops its broker and workers
        sys.exit(main())
