"""The Faust worker: the app wiring, its runtime, checkpoints, tables, the watchdog over
the consumer and the supervisor that restarts it.

One record of ``trustlayer.events``, from the fetch to its commit:

1. ``transport.py``: the worker's consumer fetches it (in the worker's own event loop) and
   hands the events topic's records to a sink instead of Faust's stream;
2. ``fetched.py``: :class:`FetchedEvents` buffers it (pausing the partition when full) until
   the judge takes a batch;
3. ``runtime.py``: :meth:`Runtime.judge` reads it ahead (``stream/judging/screenshots.py``:
   decoded by ``stream/judging/events.py``, a large screenshot in a child process), then,
   within the judge's turn, hands it to the processor;
4. ``stream/judging/processor.py``: :class:`StreamProcessor` decides what the record does to
   its run, and asks the run's owner, ``stream/judging/runbook.py`` (:class:`RunBook`), to
   do it: feed the run's matcher (``trustlayer/judge/matcher.py``), hold an early event,
   give up; ``stream/judging/emitter.py`` turns a changed status into a verdict record in
   the batch's :class:`~stream.judging.records.Output`;
5. ``runtime.py``: :class:`Outlets` hands the verdict record to the producer
   (``trustlayer.verdicts``, key run_id), and the record, with the deliveries, goes to the
   checkpoint; :class:`~stream.worker.progress.Progress` notes the offset for the watchdog;
6. ``checkpoint.py``: every commit interval :meth:`Checkpoint.settle` has the run book write
   the runs changed (``tables.py``: the ``runs`` table and its changelog), waits until those
   writes and the verdicts are delivered, and only then acknowledges the record; Faust
   commits acknowledged offsets.

After a crash the records since the last commit come again and give the same verdicts
(``stream/judging/processor.py``, "Crash safety"). ``app.py`` wires these to Faust;
``watchdog.py`` and ``supervise.py`` restart a worker that stalls or fails.
"""
