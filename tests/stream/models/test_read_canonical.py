"""Reading an event and its canonical JSON at once (stream.models.attest.read_canonical):
exactly what json.loads and canonical give, or None, whatever the bytes."""
from __future__ import annotations

import json
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from stream.models.attest import canonical, read_canonical

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"

values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text()
    | st.floats(min_value=-1e-3, max_value=1e-3) | st.integers(-2**70, 2**70)
    | st.text(alphabet='0123456789.e+-,:[]{}"'),  # texts that look like numbers
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(st.text(), inner, max_size=5),
    max_leaves=25)
formats = st.fixed_dictionaries({"ensure_ascii": st.booleans(), "sort_keys": st.booleans(),
                                 "indent": st.none() | st.integers(0, 2)})


def example_lines() -> list[bytes]:
    return [line.encode() for path in sorted(EXAMPLES.rglob("*.jsonl"))
            for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def assert_as_the_standard_library(value: bytes) -> None:
    """read_canonical gives what json.loads and canonical give, or None."""
    read = read_canonical(value)
    if read is None:
        return
    obj, body = read
    expected = json.loads(value)
    assert repr(obj) == repr(expected)  # types too: 1 is not 1.0
    assert body == canonical(expected)


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(value=values, form=formats)
def test_any_json_text_reads_as_the_standard_library_reads_it(value, form):
    assert_as_the_standard_library(json.dumps(value, **form).encode("utf-8", "surrogatepass"))


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_an_event_with_bytes_changed_reads_as_the_standard_library_reads_it(data):
    lines = example_lines()
    line = bytearray(data.draw(st.sampled_from(lines)))
    for _ in range(data.draw(st.integers(1, 3))):
        at = data.draw(st.integers(0, len(line) - 1))
        line[at:at + data.draw(st.integers(0, 1))] = data.draw(st.binary(max_size=2))
    try:
        json.loads(bytes(line))
    except (ValueError, RecursionError):
        assert read_canonical(bytes(line)) is None
    else:
        assert_as_the_standard_library(bytes(line))


def test_numbers_orjson_reads_or_writes_otherwise_are_left_to_the_standard_library():
    for text in (b'{"n": 123456789012345678901}', b'{"n": -9223372036854775809}',
                 b'{"x": 1e-05}', b'{"x": 0.00001234}', b'{"x": NaN}', b'{"x": 1e400}',
                 b'"\\ud800"', b'\xef\xbb\xbf{}'):
        assert read_canonical(text) is None, text


def test_the_example_events_are_read_by_the_fast_path():
    lines = example_lines()
    assert lines and all(read_canonical(line) is not None for line in lines)


def test_json_nested_deeper_than_orjson_writes_is_left_to_the_standard_library():
    assert_as_the_standard_library(b"[" * 250 + b"]" * 250)
    for depth in (300, 1000, 2000):  # orjson writes 255 levels at most
        assert read_canonical(b"[" * depth + b"]" * depth) is None
