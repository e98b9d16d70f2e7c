"""Screenshots are decoded off the event loop, in child processes, within a time budget: the
loop goes on while a heavy one decodes, and one over budget (or undecodable, or whose
process died) ends its run as ``stream_fault``."""
from __future__ import annotations

import asyncio
import base64
import os
import signal
from types import SimpleNamespace

import pytest
from brokenimages import heavy_png, truncated_png

from stream.judging.events import Decoded
from stream.judging.screenshots import Decoder, ReadAhead
from stream.worker.offload import child_processes
from trustlayer.errors import UnjudgeableEvent
from trustlayer.observe.event_parsing import parse_event
from trustlayer.observe.images import ImageRef


def decode(shot: ImageRef, budget: float) -> int:
    """Decode `shot` with `budget`; how many turns the event loop gave another task while it
    decoded (a decode on the loop would end within the first: 1)."""
    async def run() -> int:
        decoder = decoder_of(budget)
        turns = 0
        task = asyncio.create_task(decoder.decode(shot))
        while not task.done():
            await asyncio.sleep(0.005)
            turns += 1
        await task
        decoder.stop()
        return turns

    return asyncio.run(run())


def decoder_of(budget: float) -> Decoder:
    """The worker's decoder: two processes."""
    return Decoder(budget, child_processes, 2)


def test_a_heavy_screenshot_decodes_while_the_event_loop_goes_on():
    shot = ImageRef(heavy_png(), "heavy.png")
    turns = decode(shot, budget=60)
    assert shot.failure is None and shot.gray(128).size[0] >= 128
    # how long the loop waits meanwhile is measured by benchmarks/heavy_images.py
    assert turns > 1


def test_a_screenshot_over_budget_fails_its_event():
    shot = ImageRef(heavy_png(), "heavy.png")
    decode(shot, budget=0.001)
    assert shot.failure == "screenshot heavy.png took over 0.001 s to decode (setting " \
        "decode_budget)"
    with pytest.raises(UnjudgeableEvent, match="took over"):
        shot.gray(128)


def test_an_undecodable_screenshot_is_marked_once():
    shot = ImageRef(truncated_png(heavy_png(800)), "cut.png")
    decode(shot, budget=60)
    assert shot.failure is not None and shot.failure.startswith("screenshot cut.png does not "
                                                                "decode")


def test_a_decoding_process_that_died_fails_its_screenshot_and_the_next_gets_a_new_one():
    async def run() -> tuple[ImageRef, ImageRef]:
        decoder = decoder_of(60)
        killed, after = ImageRef(heavy_png(), "killed.png"), ImageRef(heavy_png(800), "a.png")
        task = asyncio.create_task(decoder.decode(killed))
        while decoder.pool is None or not decoder.pool._processes:  # spawned, not yet
            await asyncio.sleep(0.01)  # through its imports: the screenshot is still to do
        for process in list(decoder.pool._processes.values()):
            os.kill(process.pid, signal.SIGKILL)
        await task
        await decoder.decode(after)
        decoder.stop()
        return killed, after

    killed, after = asyncio.run(run())
    assert killed.failure is not None and "BrokenProcessPool" in killed.failure
    assert after.failure is None and after.size == (800, 800)  # decoded


def test_read_ahead_decodes_in_the_background_and_hands_over_what_it_read():
    uri = "data:image/png;base64," + base64.b64encode(heavy_png()).decode()
    obj = {"v": 1, "run_id": "r", "task": "t", "seq": 0, "ts": 1.0, "kind": "state",
           "observation": {"screenshot": uri}}
    decoded = Decoded(parse_event(obj), obj, None)
    message = SimpleNamespace(partition=0, offset=7)

    async def run() -> tuple[bool, bool, Decoded | None]:
        ahead = ReadAhead(lambda record: decoded, decoder_of(60))
        first = ahead.ready(message)  # read, and its screenshot decoding started
        await ahead.wait()
        return first, ahead.ready(message), ahead.take(message)

    first, then, taken = asyncio.run(run())
    assert (first, then, taken) == (False, True, decoded)
    shot = decoded.event.observation.screenshot
    assert shot.failure is None and shot.gray(128).size[0] >= 128  # decoded, not failed


def test_a_screen_sized_screenshot_is_ready_at_once_and_decoded_in_the_judges_turn():
    """Handing it to a process and back costs more than decoding it (docs/benchmarks.md)."""
    uri = "data:image/png;base64," + base64.b64encode(heavy_png(1000)).decode()
    obj = {"v": 1, "run_id": "r", "task": "t", "seq": 0, "ts": 1.0, "kind": "state",
           "observation": {"screenshot": uri}}
    decoded = Decoded(parse_event(obj), obj, None)

    async def run() -> bool:
        decoder = decoder_of(60)
        ready = ReadAhead(lambda record: decoded, decoder).ready(SimpleNamespace(partition=0,
                                                                                 offset=1))
        assert decoder.pool is None  # no process made
        return ready

    assert asyncio.run(run())
    assert decoded.event.observation.screenshot.size == (1000, 1000)  # from its header
