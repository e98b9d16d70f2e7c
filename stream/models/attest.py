"""Signed outcomes: which runner vouches that a run ended as it says.

A runner signs its run's ``end`` event: ``meta.attestation`` holds the runner's id, the
SHA-256 chain of every event before the end (:func:`chain_link`: each link hashes the
previous link and the event's JSON, keys sorted) and an HMAC-SHA256, under the runner's
key, of the end event with that attestation minus the signature. The signature thus binds
the outcome to this run id and to the exact content of every earlier event: a forged
``end``, an outcome copied onto another run, or a run whose events were changed on the way
carries no valid attestation. Only an attested success is learned from
(:mod:`stream.models.refine`).

Keys (:func:`runner_keys`): ``$TRUSTLAYER_RUNNER_KEYS``, a JSON file ``{runner id: key}``,
else the machine's own runner ``local`` with the key file ``runner.key`` in the state
directory (made once, like the model key), which ``trustlayer replay`` signs with. Runners
count as independent witnesses of a change only through distinct secrets: whoever holds a
key can sign as every runner id given that key, so keys shared by several runner ids are
refused (:func:`shared_keys`), naming them, and the worker does not start.
"""
from __future__ import annotations

import hashlib
import hmac
import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import orjson

from stream.models.signing import key_file, state_dir

ATTESTATION = "attestation"
KEYS_ENV = "TRUSTLAYER_RUNNER_KEYS"
LOCAL_RUNNER = "local"
KEY_FILE = "runner.key"
#: The chain of a run before its first event.
CHAIN_START = hashlib.sha256(b"trustlayer run").hexdigest()


def canonical(obj: Any) -> bytes:
    """`obj` as the bytes every signer and verifier hashes: JSON, keys sorted, compact."""
    return _CANONICAL(obj).encode("utf-8", "surrogatepass")


# one encoder for every event (json.dumps makes one per call: 7 % of a small event's cost)
_CANONICAL = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode
#: Floats orjson writes as canonical() does: 0 and magnitudes in [1e-4, 2**63) (fuzzed over
#: millions of doubles); an integer past 64 bits orjson reads as a float of 2**63 or more.
_SAME_FROM, _SAME_BELOW = 1e-4, 2.0 ** 63


def read_canonical(value: bytes) -> tuple[Any, bytes] | None:
    """`value` read as JSON and its :func:`canonical` bytes, both exactly what ``json.loads``
    and :func:`canonical` give, read by orjson (a fifth of their cost); None when orjson
    cannot vouch for that (then read them so).

    orjson refuses what differs from json.loads by raising (NaN, Infinity, lone surrogates,
    other encodings) and differs silently in numbers only: it reads an integer past 64 bits
    as a float, and writes a float under 1e-4 otherwise ("0.00001", "1e-5" for "1e-05"). A
    text holding a float outside [1e-4, 2**63) but 0 is read the slow way.

    >>> read_canonical(b'{"b": [1, 2.5], "a": "x"}')
    ({'b': [1, 2.5], 'a': 'x'}, b'{"a":"x","b":[1,2.5]}')
    >>> read_canonical(b'{"t": 1e-05}') is None, read_canonical(b'[123456789012345678901]')
    (True, None)
    """
    try:
        obj = orjson.loads(value)
        if _odd_float(obj):
            return None
        return obj, orjson.dumps(obj, option=orjson.OPT_SORT_KEYS)
    except (orjson.JSONDecodeError, orjson.JSONEncodeError):  # (writing: nested too deep)
        return None


def _odd_float(obj: Any) -> bool:
    """Whether JSON value `obj` holds a float orjson may have read or would write otherwise
    than the standard library (a walk of its values: it costs the same for a screenshot's
    data URI as for a word, where a search of the written text took 50 us)."""
    stack = [obj]
    while stack:
        value = stack.pop()
        kind = type(value)
        if kind is dict:
            stack.extend(value.values())
        elif kind is list:
            stack.extend(value)
        elif kind is float and value and not _SAME_FROM <= abs(value) < _SAME_BELOW:
            return True
    return False


def chain_link(previous: str, body: bytes) -> str:
    """The next link of a run's chain after an event whose :func:`canonical` JSON is
    `body` (see the module doc)."""
    link = hashlib.sha256(previous.encode("ascii"))
    link.update(body)  # (not joined to the link first: a screenshot's body is 36 KB)
    return link.hexdigest()


def _signature(end: dict, key: bytes) -> str:
    meta = dict(end.get("meta") or {})
    meta[ATTESTATION] = {k: v for k, v in meta[ATTESTATION].items() if k != "signature"}
    return hmac.new(key, canonical({**end, "meta": meta}), hashlib.sha256).hexdigest()


class Signer:
    """A runner's side: :meth:`sign` each event of its runs, in ``seq`` order per run; the
    ``end`` events come back attested."""

    def __init__(self, runner: str, key: bytes):
        self.runner, self.key = runner, key
        self._chains: dict[str, str] = {}

    def sign(self, event: dict) -> dict:
        run_id = event["run_id"]
        chain = self._chains.get(run_id, CHAIN_START)
        if event.get("kind") != "end":
            self._chains[run_id] = chain_link(chain, canonical(event))
            return event
        self._chains.pop(run_id, None)
        meta = {**(event.get("meta") or {}), ATTESTATION: {"runner": self.runner,
                                                            "chain": chain}}
        signed = {**event, "meta": meta}
        meta[ATTESTATION]["signature"] = _signature(signed, self.key)
        return signed


def attested_by(end: dict, chain: str, keys: dict[str, bytes]) -> str | None:
    """The runner whose valid attestation `end` carries, given the `chain` of the events
    fed before it; None when there is none, the runner is unknown, or anything differs."""
    attestation = (end.get("meta") or {}).get(ATTESTATION) if isinstance(end, dict) else None
    if not isinstance(attestation, dict):
        return None
    runner, signature = attestation.get("runner"), attestation.get("signature")
    if not isinstance(runner, str) or runner not in keys or not isinstance(signature, str) \
            or attestation.get("chain") != chain:
        return None
    return runner if hmac.compare_digest(signature, _signature(end, keys[runner])) else None


def run_attested_by(raw_events: Iterable[dict], keys: dict[str, bytes]) -> str | None:
    """The runner that attests a whole run (its events' JSON in ``seq`` order, the last
    its ``end``), or None."""
    chain, events = CHAIN_START, list(raw_events)
    if not events or events[-1].get("kind") != "end":
        return None
    for event in events[:-1]:
        chain = chain_link(chain, canonical(event))
    return attested_by(events[-1], chain, keys)


def shared_keys(keys: dict[str, bytes]) -> str | None:
    """One line naming the runner ids that share a key (they would count as independent
    runners while one secret signs for all), or None when every key is distinct.

    >>> shared_keys({"r1": b"k", "r2": b"k", "r3": b"other"})
    'runners r1, r2 share one key: each runner needs its own secret to count as independent'
    """
    holders: dict[bytes, list[str]] = {}
    for runner, key in keys.items():
        holders.setdefault(key, []).append(runner)
    groups = ["runners " + ", ".join(sorted(group)) + " share one key"
              for group in holders.values() if len(group) > 1]
    return "; ".join(sorted(groups)) + ": each runner needs its own secret to count as " \
        "independent" if groups else None


def local_signer() -> Signer:
    """The signer of this machine's runner, ``local`` (``trustlayer replay``, the demo)."""
    return Signer(LOCAL_RUNNER, key_file(state_dir() / KEY_FILE, KEYS_ENV))


def runner_keys() -> dict[str, bytes]:
    """The runners whose outcomes are trusted, and their keys (see the module doc)."""
    given = os.environ.get(KEYS_ENV)
    if not given:
        return {LOCAL_RUNNER: local_signer().key}
    try:
        data = json.loads(Path(given).expanduser().read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise OSError(f"{KEYS_ENV}={given}: not a readable JSON file of runner keys "
                      f"({exc})") from None
    if not isinstance(data, dict) or not all(isinstance(k, str) and isinstance(v, str)
                                             and len(v) >= 32 for k, v in data.items()):
        raise OSError(f"{given}: runner keys must be {{\"runner id\": \"key of 32+ "
                      "characters\"}")
    keys = {runner: key.encode("utf-8") for runner, key in data.items()}
    if shared := shared_keys(keys):
        raise OSError(f"{given}: {shared}")
    return keys
