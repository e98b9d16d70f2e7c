"""The line a reason quotes for a state no successful run showed (trustlayer.judge.quotes)."""
from devsets import DEVTRACES, EXAMPLES, SHARED

from trustlayer.judge.matcher import judge_run
from trustlayer.judge.quotes import LINE_CHARS, telling_line
from trustlayer.learn.learner import learn
from trustlayer.observe.fingerprints import Fingerprint
from trustlayer.observe.trace_events import Observation
from trustlayer.observe.traces import read_run, read_runs

MODEL = learn(read_runs([EXAMPLES / "jupyter" / "train"]))


def quote(text: str, novel: list[str]) -> str:
    lines = frozenset(f"X|{line}" for line in text.splitlines())
    return telling_line(MODEL, Fingerprint(lines), Observation(text=text), novel, (), 0)


def test_the_line_with_the_most_new_words_is_quoted_verbatim():
    text = "File Edit View\nusage: tool [options]\ntool: error: unrecognized arguments: --x=1"
    assert quote(text, ["arguments", "options", "unrecognized"]) == \
        "tool: error: unrecognized arguments: --x=1"


def test_a_line_of_megabytes_is_quoted_short():
    said = quote("Error " + "z" * 2_000_000, ["Error"])
    assert said.startswith("Error") and said.endswith("…") and len(said) <= LINE_CHARS + 1


def test_a_line_with_new_words_is_quoted_before_a_table_row_with_more():
    text = "countries\nAfghanistan\tAsia\tKabul\nwarning: stale results"
    assert quote(text, ["Afghanistan", "Asia", "Kabul", "stale"]) == "warning: stale results"


@DEVTRACES
def test_a_filter_the_product_ignored_is_told_by_the_heading_not_a_row_of_data():
    """The product showed every row (188) where successful runs saw 8: the page's heading
    says so; the first country of the unfiltered table says nothing."""
    task = SHARED / "datasette-dev" / "ds-countries-filter-count"
    status = judge_run(learn(read_runs([task / "train"])),
                       read_run(task / "test" / "ds-countries-filter-count-test-14.jsonl"))
    assert (status.verdict, status.cause, status.step) == ("fail", "product_bug", 14)
    assert "showed '188 rows where cities > 2 sorted by name'" in status.reason, status.reason
