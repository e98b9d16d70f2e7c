"""Shared pytest fixtures, and the ``devtraces`` mark: tests that read the dev traces in
``../shared/traces`` are skipped where the folder is absent (a clone alone), and with
``--require-devtraces`` (CI) its absence stops the run instead of skipping anything."""
from __future__ import annotations

from collections.abc import Iterator

import pytest
from devsets import SHARED
from llm_server import FakeLLMServer


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--require-devtraces", action="store_true",
                     help=f"fail, not skip, when the dev traces ({SHARED}) are missing")


def pytest_configure(config: pytest.Config) -> None:
    if config.getoption("--require-devtraces") and not SHARED.is_dir():
        raise pytest.UsageError(f"--require-devtraces: the dev traces are missing at {SHARED}")


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    # before any fixture is set up: module fixtures read the traces; raised here, every
    # such skip has one place and one reason, so pytest's summary folds them into one line
    if item.get_closest_marker("devtraces") and not SHARED.is_dir():
        pytest.skip(f"devtraces: needs the dev traces at {SHARED} (see README.md, Tests)")


@pytest.fixture
def llm_server() -> Iterator[FakeLLMServer]:
    """A local fake chat-completions server; set ``.behaviour`` per test."""
    server = FakeLLMServer().start()
    yield server
    server.stop()
