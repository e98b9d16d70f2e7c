"""A fault for a worker started with this directory on ``PYTHONPATH`` and
``$TRUSTLAYER_TEST_FAULT`` naming a file that does not exist yet: the worker's first send of
verdicts (``$TRUSTLAYER_TEST_FAULT_IN`` unset or ``send``) or its first refinement of a
finished run (``refine``) raises (a bug outside one record's processing) and creates the
file, so that the worker started again after it runs without the fault."""
import os

marker = os.environ.get("TRUSTLAYER_TEST_FAULT")
if marker:
    import stream.worker.runtime
    import stream.worker.training

    def failing_once(work, applies):
        async def wrapped(self, arg):
            if applies(arg) and not os.path.exists(marker):
                open(marker, "w").close()
                raise RuntimeError("injected fault")
            return await work(self, arg)
        return wrapped

    if os.environ.get("TRUSTLAYER_TEST_FAULT_IN") == "refine":
        runs = stream.worker.training.TrainingRuns
        runs.refine = failing_once(runs.refine, lambda message: True)
    else:
        stream.worker.runtime.Outlets.send = failing_once(stream.worker.runtime.Outlets.send,
                                                   lambda out: bool(out.verdicts))
