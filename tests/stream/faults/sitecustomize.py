"""A fault for a worker started with this directory on ``PYTHONPATH`` and
``$TRUSTLAYER_TEST_FAULT`` naming a file that does not exist yet: the worker's first send of
verdicts raises (a bug outside one record's processing) and creates the file, so that the
worker started again after it runs without the fault."""
import os

marker = os.environ.get("TRUSTLAYER_TEST_FAULT")
if marker:
    import stream.runtime

    send = stream.runtime.Outlets.send

    async def send_failing_once(self, out):
        if out.verdicts and not os.path.exists(marker):
            open(marker, "w").close()
            raise RuntimeError("injected fault")
        return await send(self, out)

    stream.runtime.Outlets.send = send_failing_once
