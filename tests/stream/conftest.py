"""Fixtures for the streaming tests: one real Kafka (KRaft, 4.4) per test session."""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
if str(REPO_ROOT) not in sys.path:  # the repo's `stream` package, also when not installed
    sys.path.insert(0, str(REPO_ROOT))

from stream.kafka.broker import EmbeddedKafka, KafkaLibsMissing  # noqa: E402
from stream.models.signing import STATE_ENV  # noqa: E402

# the model key file the workers, the demo and the tests share (stream.models.signing), made in a
# fresh state directory rather than the user's
os.environ.setdefault(STATE_ENV, tempfile.mkdtemp(prefix="trustlayer-state-"))


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Every test that needs the real broker (the `kafka` fixture, directly or through
    another) is marked `kafka`: ``pytest -m "not kafka"`` runs the rest in minutes."""
    for item in items:
        if "kafka" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.kafka)


@pytest.fixture(scope="session")
def kafka():
    """A running EmbeddedKafka shared by the session; fails (no skip) without the jars."""
    try:
        broker = EmbeddedKafka()
    except KafkaLibsMissing as e:
        pytest.fail(str(e), pytrace=False)
    broker.start()
    try:
        yield broker
    finally:
        broker.stop()
