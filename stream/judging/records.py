"""What the worker keeps and sends: where a record came from, what processing a batch
produced, one run's record in the table (JSON) and the store it lives in."""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field, fields
from typing import Protocol

import orjson


@dataclass
class Source:
    """Where a record came from: its partition, offset and publish time (seconds)."""

    partition: int
    offset: int
    timestamp: float
    topic: str = "trustlayer.events"


@dataclass
class Output:
    """What processing produced, for the app to send."""

    verdicts: list[tuple[str, dict]] = field(default_factory=list)
    dlq: list[tuple[bytes | None, dict]] = field(default_factory=list)
    finished: list[tuple[str, dict]] = field(default_factory=list)
    models: list = field(default_factory=list)  # versions to publish (stream.judging.shadow)


@dataclass
class Held:
    """An event that came before its turn, waiting for the gap to fill: where it was
    published (`offset`, `pub` time), its size in bytes and the event (JSON)."""

    offset: int
    pub: float
    size: int
    event: dict


@dataclass
class Sent:
    """A verdict caused by the record at offset `trigger`, kept so that the record, coming
    again after a restart, sends it again."""

    trigger: int
    record: dict


@dataclass
class RunRecord:
    """One run's state in the table (JSON), changed by its owner alone
    (:class:`~stream.judging.runbook.RunBook`). ``held`` maps seq -> held event; ``digests``
    holds the :func:`event_digest` of each event fed, by seq (kept after the run ended:
    a late repeat is compared with it); ``chain`` the chain of the events fed
    (:func:`stream.models.attest.chain_link`) and ``runner`` who attested its end, if anyone;
    ``release`` the agent's release its first event named (``meta.agent_version``);
    ``plain_numbers`` that every event it took was read by orjson
    (:func:`stream.models.attest.read_canonical`), so no NaN or Infinity is in it.

    What grows with the run is written in parts (:mod:`stream.judging.parts`): ``sealed``
    counts the digests, offsets and history rows held in the run's ``parts`` sealed parts;
    the record itself, the head, holds those that came since (:meth:`encode`). In memory
    ``digests`` and ``offsets`` are whole; ``snapshot`` is the head's (history rows from
    ``sealed[2]`` on)."""

    run_id: str
    task: str
    version: int
    partition: int
    next_seq: int = 0
    last_offset: int = -1
    last_ts: float | None = None
    last_pub: float | None = None
    held: dict[str, Held] = field(default_factory=dict)
    snapshot: dict | None = None
    last_key: list | None = None
    sent: list[Sent] = field(default_factory=list)
    outbox: list[dict] = field(default_factory=list)
    final: bool = False
    ended: bool = False
    outcome: str | None = None
    complete: bool = True
    offsets: list[int] = field(default_factory=list)
    closed_at: float | None = None
    history_bytes: int = 0
    digests: list[str] = field(default_factory=list)
    chain: str | None = None
    runner: str | None = None
    shadow_version: int | None = None
    release: str | None = None  # the agent's release: meta.agent_version of seq 0
    plain_numbers: bool = True
    sealed: list[int] = field(default_factory=lambda: [0, 0, 0])
    parts: int = 0

    def encode(self) -> bytes:
        """The head: this record with the digests and offsets not yet sealed in a part."""
        digests, offsets = self.digests, self.offsets
        # vars(), not dataclasses.asdict(): no deep copy of the snapshot and held events
        data = {**vars(self), "held": {seq: vars(h) for seq, h in self.held.items()},
                "sent": [vars(item) for item in self.sent],
                "digests": digests[self.sealed[0]:] if self.sealed[0] else digests,
                "offsets": offsets[self.sealed[1]:] if self.sealed[1] else offsets}
        return encoded(data, self.plain_numbers)

    @classmethod
    def decode(cls, value: bytes | str | dict) -> RunRecord:
        data = value if isinstance(value, dict) else json.loads(value)
        known = {f.name for f in fields(cls)}
        # a record written before plain_numbers was kept: it may hold a NaN
        kept = {"plain_numbers": False} | {k: v for k, v in data.items() if k in known}
        kept["held"] = {seq: Held(**h) for seq, h in kept.get("held", {}).items()}
        kept["sent"] = [Sent(**item) for item in kept.get("sent", [])]
        return cls(**kept)

    @property
    def held_since(self) -> float | None:
        return min((h.pub for h in self.held.values()), default=None)

    @property
    def held_bytes(self) -> int:
        return sum(h.size for h in self.held.values())


def encoded(data: dict, plain_numbers: bool) -> bytes:
    """`data` as compact JSON; `plain_numbers`: it holds no NaN or Infinity (see
    :attr:`RunRecord.plain_numbers`)."""
    if plain_numbers:
        # orjson: a fifth of json.dumps's cost (a worker writes every run it judged at each
        # checkpoint). It would write NaN and Infinity as null, and only an event can bring
        # them: every other number here is computed.
        try:
            return orjson.dumps(data)
        except TypeError:  # an integer past 64 bits, a key not a string
            pass
    return json.dumps(data, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def event_digest(body: bytes) -> str:
    """A short digest of an event's canonical JSON (:func:`stream.models.attest.canonical`): a
    repeat of a ``(run_id, seq)`` with another digest is not the same event. SHA-256 cut to
    8 bytes: with the CPU's SHA instructions it hashes a screenshot's 36 KB in 24 us, where
    BLAKE2b took 54."""
    return hashlib.sha256(body).hexdigest()[:16]


def digest_of_same(known: str, body: bytes) -> bool:
    """Whether `known`, a digest a record holds, is that of the event whose canonical JSON is
    `body`: by :func:`event_digest`, or by the BLAKE2b digest of the workers before it (a
    record kept in the changelog outlives an upgrade of its workers)."""
    return known == event_digest(body) or known == hashlib.blake2b(body, digest_size=8).hexdigest()


class Store(Protocol):
    """Where run records live: ``get(run_id)`` and ``put(run_id, partition, value|None)``."""

    def get(self, key: str) -> bytes | None: ...

    def put(self, key: str, partition: int, value: bytes | None) -> None: ...


class DictStore(dict):
    """A :class:`Store` in memory (tests, benchmarks)."""

    def put(self, key: str, partition: int, value: bytes | None) -> None:
        if value is None:
            self.pop(key, None)
        else:
            self[key] = value
