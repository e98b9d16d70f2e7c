"""Screens at full resolution and the difference of two screens, as Playwright's report
shows a failed screenshot comparison: the shown screen faded to gray with every pixel
that differs from the expected one in red (after pixelmatch)."""
from __future__ import annotations

import base64
import io

import numpy as np
from PIL import Image

DIFF_THRESHOLD = 32  # per channel, of 255: antialiasing and JPEG noise stay below it
FADE = 0.25  # how much of the shown screen's contrast the diff image keeps
MIMES = {"PNG": "image/png", "JPEG": "image/jpeg", "WEBP": "image/webp", "GIF": "image/gif"}


def data_uri(data: bytes, mime: str) -> str:
    return f"data:{mime};base64,{base64.b64encode(data).decode('ascii')}"


def png_bytes(image: Image.Image) -> bytes:
    out = io.BytesIO()
    image.save(out, format="PNG", optimize=True)
    return out.getvalue()


def full_resolution(data: bytes) -> str:
    """A screenshot as it was taken, as a data URI (its own format kept when a browser
    shows it, else PNG)."""
    with Image.open(io.BytesIO(data)) as image:
        mime = MIMES.get(image.format or "")
        return data_uri(data, mime) if mime else data_uri(png_bytes(image), "image/png")


def pixel_diff(expected: bytes, shown: bytes) -> tuple[Image.Image, float]:
    """The shown screen faded, with the pixels that differ from the expected screen in red;
    and the share of pixels that differ. Screens of two sizes are laid on each other from
    the top left (as a window's content sits), and what only one of them covers differs.

    >>> def png(color, size=(4, 2)):
    ...     return png_bytes(Image.new("RGB", size, color))
    >>> image, share = pixel_diff(png("white"), png("black"))
    >>> image.getpixel((0, 0)), share
    ((255, 0, 0), 1.0)
    >>> pixel_diff(png("white"), png("white"))[1], pixel_diff(png("white", (2, 2)), png("white"))[1]
    (0.0, 0.5)
    """
    with Image.open(io.BytesIO(shown)) as shown_image:
        after = shown_image.convert("RGB")
    with Image.open(io.BytesIO(expected)) as expected_image:
        before = expected_image.convert("RGB")
    b = np.asarray(after, dtype=np.int16)
    a = np.zeros_like(b)
    width, height = min(before.width, after.width), min(before.height, after.height)
    a[:height, :width] = np.asarray(before, dtype=np.int16)[:height, :width]
    differs = np.abs(a - b).max(axis=-1) > DIFF_THRESHOLD
    differs[height:, :] = True
    differs[:, width:] = True
    gray = np.asarray(after.convert("L"), dtype=np.float32)
    faded = (255 - (255 - gray) * FADE).astype(np.uint8)
    out = np.repeat(faded[:, :, None], 3, axis=-1)
    out[differs] = (255, 0, 0)
    return Image.fromarray(out), float(differs.mean())
