"""Runner library: record an agent's runs as trace events while they happen.

``with Run(task, sink) as run:`` then ``run.state(...)``, ``run.action(...)``,
``run.end(outcome)``; every event is numbered, time-stamped and validated as the judge
reads it. Sinks: :class:`TraceDir` (files) here, ``stream.kafka.runner_sink.KafkaSink`` on the
stream side. Adapters: :mod:`trustlayer.runner.playwright` (a browser page) and
:mod:`trustlayer.runner.worktree` (a coding agent's working tree). See docs/runner.md.
"""
from trustlayer.runner.events import EventBuilder
from trustlayer.runner.run import AsyncRun, Run, new_run_id
from trustlayer.runner.sinks import Sink, TraceDir

__all__ = ["AsyncRun", "EventBuilder", "Run", "Sink", "TraceDir", "new_run_id"]
