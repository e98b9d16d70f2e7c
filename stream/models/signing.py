"""Signed model records: a worker adopts a model from ``trustlayer.models`` only if it was
signed with the key the worker holds (HMAC-SHA256 over the record's exact value bytes, hex,
in the Kafka header ``trustlayer-signature``). Anyone who can write to Kafka can publish a
record, not a model the workers will use.

The key (:func:`model_key`): ``$TRUSTLAYER_MODEL_KEY`` when set (any text; docker-compose
and a fleet of hosts pass one this way), else the key file ``model.key`` in the state
directory (``$TRUSTLAYER_STATE_DIR``, default ``$XDG_STATE_HOME/trustlayer`` or
``~/.local/state/trustlayer``), made once with 32 random bytes and mode 0600: every process
of the same user on the machine (``trustlayer demo``, ``worker``, ``models rollback``)
shares it without any configuration.
"""
from __future__ import annotations

import hashlib
import hmac
import os
import secrets
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from stream.deadletter import Rejected
from stream.models.registry import decode_model
from trustlayer.errors import ModelError
from trustlayer.model import Model

KEY_ENV = "TRUSTLAYER_MODEL_KEY"
STATE_ENV = "TRUSTLAYER_STATE_DIR"
HEADER = "trustlayer-signature"
KEY_FILE = "model.key"


def state_dir() -> Path:
    """Where trustlayer keeps its state on this machine (the model key)."""
    chosen = os.environ.get(STATE_ENV)
    if chosen:
        return Path(chosen).expanduser()
    base = os.environ.get("XDG_STATE_HOME") or Path.home() / ".local" / "state"
    return Path(base) / "trustlayer"


def model_key() -> bytes:
    """The key that signs and verifies model records (see the module doc)."""
    given = os.environ.get(KEY_ENV)
    if given:
        return given.encode("utf-8")
    return key_file(state_dir() / KEY_FILE, KEY_ENV)


def key_file(path: Path, env: str) -> bytes:
    """The key in `path`, made first if missing (an alternative is given in `env`)."""
    if not path.exists():
        _create_key(path)
    key = path.read_bytes().strip()
    if len(key) < 32:
        raise OSError(f"{path}: a key of {len(key)} bytes; remove the file to make "
                      f"a new one, or set {env}")
    return key


def _create_key(path: Path) -> None:
    """Write a new random key to `path` with mode 0600, atomically: a process that makes
    one at the same time leaves one key, which both then read."""
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    temp = path.with_name(f".{path.name}.{os.getpid()}")
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as out:
        out.write(secrets.token_hex(32) + "\n")
    try:
        os.link(temp, path)
    except FileExistsError:
        pass
    finally:
        temp.unlink()


def signature(value: bytes, key: bytes) -> str:
    """HMAC-SHA256 of `value` under `key`, hex."""
    return hmac.new(key, value, hashlib.sha256).hexdigest()


def signed_headers(value: bytes, key: bytes) -> list[tuple[str, bytes]]:
    """The Kafka headers of a model record with value `value`."""
    return [(HEADER, signature(value, key).encode("ascii"))]


def verify(value: bytes | None, headers: Iterable[tuple[str, bytes]] | None, key: bytes) -> None:
    """Raise :class:`~stream.deadletter.Rejected` (``unsigned_model``, ``bad_signature``)
    unless `headers` sign `value` with `key`."""
    given = [v for name, v in headers or () if name == HEADER]
    if not given:
        raise Rejected("unsigned_model", f"no {HEADER} header: model records must be "
                             f"signed with the workers' key ({KEY_ENV} or the key file)")
    expected = signature(value or b"", key).encode("ascii")
    if len(given) != 1 or not hmac.compare_digest(bytes(given[0] or b""), expected):
        raise Rejected("bad_signature", f"the {HEADER} header does not match the "
                             "record's value under this worker's key")


def verified_model(record: Any, key: bytes) -> Model:
    """The model of a ``trustlayer.models`` record (an aiokafka ``ConsumerRecord``: topic,
    partition, offset, headers, value) signed with `key`; raises
    :class:`~stream.deadletter.Rejected` (``unsigned_model``, ``bad_signature``,
    ``bad_model``) for any other record, whatever its bytes."""
    where = f"{record.topic}[{record.partition}]@{record.offset}"
    try:
        verify(record.value, record.headers, key)
    except Rejected as exc:
        raise Rejected(exc.reason, f"{where}: {exc.message}") from None
    try:
        return decode_model(record.value or b"")
    except (ModelError, ValueError, TypeError, KeyError, AttributeError) as exc:
        raise Rejected("bad_model", f"{where}: not a valid model ({exc})") from None
