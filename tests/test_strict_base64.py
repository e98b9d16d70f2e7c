"""strict_b64decode accepts, refuses and decodes exactly as the standard library's strict
base64 does, on texts near the alphabet's edges (padding, whitespace, other alphabets)."""
from __future__ import annotations

import base64
import binascii
import os

from hypothesis import given
from hypothesis import strategies as st

from trustlayer.strict_base64 import strict_b64decode

_NEAR_BASE64 = st.text(alphabet="QUJDRAzy09+/=\n _-é", max_size=16)


def _read(decode, text: str) -> bytes | str:
    try:
        return decode(text)
    except (binascii.Error, ValueError) as exc:
        return type(exc).__name__


@given(_NEAR_BASE64)
def test_same_as_the_standard_library(text: str) -> None:
    assert _read(strict_b64decode, text) == _read(
        lambda t: base64.b64decode(t, validate=True), text)


def test_a_screenshot_sized_text_and_bytes() -> None:
    data = os.urandom(27_000)
    encoded = base64.b64encode(data)
    assert strict_b64decode(encoded) == data
    assert strict_b64decode(encoded.decode()) == data
    assert _read(strict_b64decode, encoded.decode() + "\n") == "Error"
