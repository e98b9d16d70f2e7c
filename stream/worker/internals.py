"""The private parts of faust-streaming and aiokafka the worker relies on
(:mod:`stream.worker.transport` subclasses Faust's consumer and sets attributes of aiokafka's
fetcher; :mod:`stream.worker.watchdog` reads the consumer's partitions and poll times),
checked before the worker starts: a release that renamed one would otherwise break
the worker silently. ``pyproject.toml`` pins both to the minor versions tested here."""
from __future__ import annotations

import importlib
from importlib.metadata import PackageNotFoundError, version

#: The minor versions the worker is tested with (as pinned in pyproject.toml).
TESTED = {"faust-streaming": "0.15", "aiokafka": "0.14"}

#: (module, class, attributes): each a class attribute or one its ``__init__`` (or a base
#: class's) sets.
PATCHED = (
    ("faust.transport.drivers.aiokafka", "AIOKafkaConsumerThread",
     ("_create_worker_consumer", "_ensure_consumer", "_serve", "_gather_remaining_tasks",
      "_thread_started", "_thread_running", "call_thread", "seek_to_committed")),
    ("faust.transport.drivers.aiokafka", "Consumer",
     ("_new_consumer_thread", "_read_offset", "_add_gap", "track_message", "getmany",
      # read by the watchdog (stream.worker.watchdog)
      "_thread", "_get_active_partitions", "_paused_partitions", "_buffered_partitions")),
    ("faust.transport.drivers.aiokafka", "AIOKafkaConsumerThread", ("_consumer",)),
    ("aiokafka", "AIOKafkaConsumer", ("_fetch_max_wait_ms", "_fetcher", "seek_to_committed",
                                      "_coordinator", "last_poll_timestamp")),
    ("aiokafka.consumer.group_coordinator", "GroupCoordinator", ("_group_subscription",)),
    ("aiokafka.consumer.fetcher", "Fetcher",
     ("_proc_fetch_request", "_prefetch_backoff", "_fetcher_timeout", "_fetch_min_bytes",
      "_fetch_max_wait_ms")),
)


def has_attribute(cls: type, name: str) -> bool:
    """Whether instances of `cls` have `name`: a class attribute, one its classes declare
    (an annotation), or one that an ``__init__`` of its classes assigns (``self.name = ...``)."""
    if hasattr(cls, name) or any(name in vars(klass).get("__annotations__", {})
                                 for klass in cls.__mro__):
        return True
    codes = (getattr(vars(klass).get("__init__"), "__code__", None) for klass in cls.__mro__)
    return any(name in code.co_names for code in codes if code is not None)


def missing(patched: tuple[tuple[str, str, tuple[str, ...]], ...] = PATCHED) -> list[str]:
    """The patched names that are not there, as ``module.Class.attribute``."""
    gone = []
    for module, name, attributes in patched:
        cls = getattr(importlib.import_module(module), name, None)
        gone += ([f"{module}.{name}"] if cls is None else
                 [f"{module}.{name}.{a}" for a in attributes if not has_attribute(cls, a)])
    return gone


def untested() -> str | None:
    """One line saying why the installed faust-streaming / aiokafka cannot run the worker
    (a version not tested, or a patched name gone), or None when they can."""
    found = {}
    for package in TESTED:
        try:
            found[package] = version(package)
        except PackageNotFoundError:
            found[package] = "none"
    wrong = [p for p, v in found.items() if not (v + ".").startswith(TESTED[p] + ".")]
    try:
        gone = missing()
    except ImportError as exc:
        gone = [str(exc)]
    if not wrong and not gone:
        return None
    tested = ", ".join(f"{p} {v}.x" for p, v in TESTED.items())
    installed = ", ".join(f"{p} {v}" for p, v in found.items())
    what = f"missing {', '.join(gone)}" if gone else "untested versions"
    return (f"the worker needs {tested} (it patches their internals), found {installed}: "
            f"{what}; install the tested ones: pip install -c requirements.lock '.[stream]'")
