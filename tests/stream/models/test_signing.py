"""The model key and signatures (stream.models.signing), without a broker."""
from __future__ import annotations

import stat
from types import SimpleNamespace

import pytest
from streamkit import model

from stream.deadletter import Rejected
from stream.models.registry import encode_model
from stream.models.signing import (
    HEADER,
    KEY_ENV,
    STATE_ENV,
    model_key,
    signed_headers,
    verified_model,
)


def test_the_key_file_is_made_once_with_mode_0600_and_the_env_key_wins(tmp_path, monkeypatch):
    monkeypatch.delenv(KEY_ENV, raising=False)
    monkeypatch.setenv(STATE_ENV, str(tmp_path / "state"))
    key = model_key()
    path = tmp_path / "state" / "model.key"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600 and len(key) == 64
    assert model_key() == key  # read again, not made again
    monkeypatch.setenv(KEY_ENV, "a key given by the environment")
    assert model_key() == b"a key given by the environment"
    monkeypatch.setenv(KEY_ENV, "")
    assert model_key() == key


def record(value: bytes, headers: list) -> SimpleNamespace:
    return SimpleNamespace(topic="m", partition=0, offset=7, value=value, headers=headers)


def test_only_a_record_signed_with_the_key_is_a_model():
    key = b"k" * 32
    value = encode_model(model())
    assert verified_model(record(value, signed_headers(value, key)), key) == model()
    cases = [(record(value, []), "unsigned_model"),
             (record(value, signed_headers(value, b"j" * 32)), "bad_signature"),
             (record(value + b" ", signed_headers(value, key)), "bad_signature"),
             (record(value, signed_headers(value, key) * 2), "bad_signature"),
             (record(value, [(HEADER, b"\xff")]), "bad_signature"),
             (record(b"{}", signed_headers(b"{}", key)), "bad_model"),
             (record(None, signed_headers(b"", key)), "bad_model")]
    for case, reason in cases:
        with pytest.raises(Rejected) as refused:
            verified_model(case, key)
        assert refused.value.reason == reason and refused.value.message.startswith("m[0]@7: ")
