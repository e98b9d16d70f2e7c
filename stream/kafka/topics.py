"""The streaming service's topics: default names and explicit creation (no auto-creation).

``trustlayer.events``  key run_id, value one trace event (screenshots inline or by reference)
``trustlayer.verdicts`` key run_id, value one verdict (JSON)
``trustlayer.models``  key task, value a model version; compacted (the latest per task stays)
``trustlayer.events.dlq`` bad events with the reason

and, per worker app id, the Faust-internal topics (:func:`worker_topics`): created here
before the worker starts, since a topic Faust declares itself may miss the first
assignment ("Ignoring missing topic") and stay unassigned until the next rebalance.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
from collections.abc import Mapping

from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from aiokafka.errors import TopicAlreadyExistsError, for_code

from stream.kafka import clients
from stream.kafka.clients import MAX_MESSAGE_BYTES
from stream.kafka.names import RUNS_TABLE, TRAINING_TABLE, TopicNames, finished_topic


def topic_configs(names: TopicNames) -> dict[str, dict[str, str]]:
    """Per-topic configs used at creation."""
    big = {"max.message.bytes": str(MAX_MESSAGE_BYTES)}
    return {
        names.events: dict(big),
        names.verdicts: {},
        names.models: {"cleanup.policy": "compact", **big},
        names.dlq: dict(big),
    }


def worker_topics(app_id: str) -> dict[str, dict[str, str]]:
    """The Faust-internal topics of the worker `app_id`, with their configs.

    >>> sorted(worker_topics("w"))
    ['w-finished-runs', 'w-runs-changelog', 'w-training-changelog']
    """
    changelog = {"cleanup.policy": "compact", "max.message.bytes": str(MAX_MESSAGE_BYTES)}
    return {finished_topic(app_id): {},
            **{f"{app_id}-{table}-changelog": dict(changelog)
               for table in (RUNS_TABLE, TRAINING_TABLE)}}


async def ensure_topics_async(
    bootstrap: str,
    names: TopicNames = TopicNames(),
    partitions: int = 4,
    *,
    extra: Mapping[str, Mapping[str, str]] | None = None,
    replication_factor: int = 1,
    timeout_ms: int = 30000,
) -> list[str]:
    """Create the topics that do not exist yet (`names`, and `extra`: name -> config);
    return the names it created.

    Idempotent: existing topics are left as they are (also when another process creates one
    at the same time).
    """
    async with clients.admin(bootstrap, request_timeout_ms=timeout_ms) as admin:
        existing = set(await admin.list_topics())
        configs = {**topic_configs(names), **(extra or {})}
        wanted = [
            NewTopic(
                name=name,
                num_partitions=partitions,
                replication_factor=replication_factor,
                topic_configs=dict(configs.get(name, {})),
            )
            for name in dict.fromkeys([*names.all(), *configs])
            if name not in existing
        ]
        if not wanted:
            return []
        response = await admin.create_topics(wanted, timeout_ms=timeout_ms)
        created = []
        for topic_error in response.topic_errors:
            name, code = topic_error[0], topic_error[1]
            if code == 0:
                created.append(name)
                continue
            error = for_code(code)
            if error is TopicAlreadyExistsError:
                continue
            message = topic_error[2] if len(topic_error) > 2 else ""
            raise error(f"creating topic {name!r}: {message}")
        await _wait_for_metadata(admin, created, timeout_ms / 1000)
        return created


async def _wait_for_metadata(admin: AIOKafkaAdminClient, topics: list[str], timeout: float) -> None:
    """Wait until the new topics show up in metadata (with leaders), so producers can use them."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    pending = set(topics)
    while pending and loop.time() < deadline:
        for desc in await admin.describe_topics(list(pending)):
            parts = desc.get("partitions") or []
            led = all(p.get("leader", -1) >= 0 for p in parts)
            if desc.get("error_code") == 0 and parts and led:
                pending.discard(desc["topic"])
        if pending:
            await asyncio.sleep(0.05)


def ensure_topics(
    bootstrap: str,
    names: TopicNames = TopicNames(),
    partitions: int = 4,
    **kwargs: object,
) -> list[str]:
    """Synchronous :func:`ensure_topics_async` (usable from a running event loop's thread too)."""
    coro = ensure_topics_async(bootstrap, names, partitions, **kwargs)  # type: ignore[arg-type]
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    with concurrent.futures.ThreadPoolExecutor(1) as pool:  # a loop runs here: use another thread
        return pool.submit(asyncio.run, coro).result()
