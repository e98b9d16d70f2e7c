"""Images whose header reads but whose pixels do not decode, and an example run whose one
screenshot-only state shows such an image (the judge must decode it); heavy images, slow to
decode but valid, and a run of them."""
from __future__ import annotations

import base64
import io
import json
from collections.abc import Callable
from pathlib import Path

from devsets import REPO
from PIL import Image

TEST = REPO / "examples" / "jupyter" / "test"
RUN = "jl-save-textfile-test-05"  # passes the example model
BROKEN_SEQ = 5


def truncated_png(data: bytes) -> bytes:
    """The PNG cut in the middle of its pixel data."""
    return data[:len(data) // 2]


def palette_png_without_plte(data: bytes) -> bytes:
    """The image as a palette PNG with its PLTE chunk removed."""
    buffer = io.BytesIO()
    Image.open(io.BytesIO(data)).convert("P").save(buffer, "PNG")
    raw = buffer.getvalue()
    start = raw.index(b"PLTE") - 4
    length = int.from_bytes(raw[start:start + 4], "big")
    return raw[:start] + raw[start + 12 + length:]


def corrupt_zlib_png(data: bytes) -> bytes:
    """The PNG with bytes of its first IDAT chunk's compressed data flipped."""
    start = data.index(b"IDAT") + 4 + 64
    return data[:start] + bytes(b ^ 0x5A for b in data[start:start + 64]) + data[start + 64:]


BREAKAGES: dict[str, Callable[[bytes], bytes]] = {
    "truncated": truncated_png, "palette_without_plte": palette_png_without_plte,
    "corrupt_zlib": corrupt_zlib_png}


def broken_run(directory: Path, breakage: Callable[[bytes], bytes],
               run_id: str = RUN) -> list[dict]:
    """The events of the example run `RUN` written to `directory` (``run.jsonl``, images
    beside it) as `run_id`, state `BROKEN_SEQ` showing only its screenshot, broken."""
    directory.mkdir(parents=True, exist_ok=True)
    events = [json.loads(line) for line in (TEST / f"{RUN}.jsonl").read_text().splitlines()]
    for event in events:
        event["run_id"] = run_id
        observation = event.get("observation")
        if not observation or "screenshot" not in observation:
            continue
        data = (TEST / observation["screenshot"]).read_bytes()
        if event["seq"] == BROKEN_SEQ:
            observation.clear()
            data = breakage(data)
        name = f"s{event['seq']}.png"
        (directory / name).write_bytes(data)
        observation["screenshot"] = name
    (directory / "run.jsonl").write_text("".join(json.dumps(e) + "\n" for e in events))
    return events


def heavy_png(side: int = 6000) -> bytes:
    """A 16-bit grayscale PNG of `side`² pixels (under the pixel limit) whose decoding takes
    the CPU a while, yet small on disk (a smooth gradient compresses well)."""
    row = bytearray()
    for x in range(side):
        row += ((x * 7) % 65536).to_bytes(2, "big")
    rows = b"".join(bytes(row[2 * (y % 64):] + row[:2 * (y % 64)]) for y in range(side))
    buffer = io.BytesIO()
    Image.frombytes("I;16B", (side, side), rows).save(buffer, "PNG")
    return buffer.getvalue()


def heavy_run(run_id: str, task: str, count: int) -> list[dict]:
    """A run of `count` screenshot-only states, each a :func:`heavy_png` as a data URI, and
    its end."""
    uri = "data:image/png;base64," + base64.b64encode(heavy_png()).decode()
    states = [{"v": 1, "run_id": run_id, "task": task, "seq": seq, "ts": 1.0 + seq,
               "kind": "state", "observation": {"screenshot": uri}} for seq in range(count)]
    return [*states, {"v": 1, "run_id": run_id, "task": task, "seq": count,
                      "ts": 1.0 + count, "kind": "end", "outcome": "unknown"}]
