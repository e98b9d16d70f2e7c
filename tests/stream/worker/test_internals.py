"""The worker refuses to start on a faust-streaming or aiokafka it was not tested with: the
private names it patches are checked first, and what is wrong is said in one line."""
import re

from devsets import REPO

from stream.worker import internals
from trustlayer.errors import EXIT_BAD_INPUT


def test_the_installed_libraries_have_every_patched_name():
    assert internals.missing() == []
    assert internals.untested() is None


def test_a_name_a_release_dropped_is_named():
    gone = (("aiokafka.consumer.fetcher", "Fetcher", ("_proc_fetch_request", "_renamed")),
            ("aiokafka", "NoSuchClass", ("x",)))
    assert internals.missing(gone) == ["aiokafka.consumer.fetcher.Fetcher._renamed",
                                       "aiokafka.NoSuchClass"]


def test_attributes_set_in_init_count():
    class Base:
        def __init__(self):
            self._set_here = 1

    class Child(Base):
        pass

    assert internals.has_attribute(Child, "_set_here")
    assert not internals.has_attribute(Child, "_never_set")


def test_the_worker_refuses_an_untested_version_in_one_line(monkeypatch, capsys):
    from stream.commands.cli import cmd_worker

    monkeypatch.setitem(internals.TESTED, "aiokafka", "0.13")
    assert cmd_worker(None) == EXIT_BAD_INPUT
    line = capsys.readouterr().err
    assert line.count("\n") == 1 and "aiokafka 0.13.x" in line and "found" in line
    assert line.startswith("trustlayer worker: the worker needs faust-streaming 0.15.x")


def test_the_pins_are_the_tested_minor_versions():
    pyproject = (REPO / "pyproject.toml").read_text(encoding="utf-8")
    for package, minor in internals.TESTED.items():
        low, high = minor.split(".")
        assert f'"{package}>={minor}' in pyproject and f'<{low}.{int(high) + 1}"' in pyproject


def test_every_private_name_the_watchdog_reads_is_checked_at_start():
    source = (REPO / "stream" / "worker" / "watchdog.py").read_text(encoding="utf-8")
    read = set(re.findall(r"(?<!self)(?<!os)\.(_[a-z]\w*)", source))
    checked = {name for _, _, names in internals.PATCHED for name in names}
    assert read and read <= checked, read - checked


def test_attributes_a_class_declares_count():
    class Declared:
        _declared: set[int]

    assert internals.has_attribute(Declared, "_declared")
