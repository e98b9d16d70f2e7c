"""Shared pytest fixtures."""
from __future__ import annotations

from collections.abc import Iterator

import pytest
from llm_server import FakeLLMServer


@pytest.fixture
def llm_server() -> Iterator[FakeLLMServer]:
    """A local fake chat-completions server; set ``.behaviour`` per test."""
    server = FakeLLMServer().start()
    yield server
    server.stop()
