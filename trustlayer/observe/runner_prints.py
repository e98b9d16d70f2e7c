"""Runner-side fingerprinting: events whose screenshots travel as their fingerprints.

A runner that fingerprints its frames before publishing sends events of a few kilobytes
instead of a whole image, and workers never decode one. The event keeps every other field;
``observation.screenshot`` is replaced by ``observation.screenshot_fingerprint`` (the
extension described in docs/TRACE_FORMAT.md), computed by the code the learner and the
validator use, so a fingerprinted state is judged exactly as its screenshot would be.
"""
from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

from trustlayer.observe.fingerprints import image_signature
from trustlayer.observe.images import ImageRef, load_image
from trustlayer.settings import Settings


def screenshot_fingerprint(image: ImageRef, settings: Settings) -> dict[str, str]:
    """The ``screenshot_fingerprint`` object of one screenshot."""
    phash, thumbnail = image_signature(image, settings.thumbnail_size)
    return {"sha256": image.sha256, "phash": f"{phash:016x}",
            "thumbnail": base64.b64encode(thumbnail).decode("ascii")}


def fingerprint_screenshots(event: dict[str, Any], base_dir: Path | None,
                            settings: Settings | None = None, source: str = "<event>",
                            line: int | None = None) -> dict[str, Any]:
    """`event` (one JSON object of the trace format) with its screenshot, a path relative
    to `base_dir` or a data URI, replaced by its fingerprint. Events without a screenshot
    come back unchanged; a bad screenshot raises :class:`~trustlayer.errors.TraceError`.

    >>> fingerprint_screenshots({"kind": "action", "action": {"type": "wait"}}, None)
    {'kind': 'action', 'action': {'type': 'wait'}}
    """
    observation = event.get("observation")
    if not isinstance(observation, dict) or not isinstance(shot := observation.get("screenshot"),
                                                           str):
        return event
    settings = settings or Settings()
    image = load_image(shot, base_dir, settings, source, line)
    rest = {key: value for key, value in observation.items() if key != "screenshot"}
    printed = screenshot_fingerprint(image, settings)
    return {**event, "observation": {**rest, "screenshot_fingerprint": printed}}
