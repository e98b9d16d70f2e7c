"""The line a reason quotes for a state no successful run showed (trustlayer.judge.quotes)."""
from devsets import EXAMPLES

from trustlayer.judge.quotes import LINE_CHARS, telling_line
from trustlayer.learn.learner import learn
from trustlayer.observe.fingerprints import Fingerprint
from trustlayer.observe.trace_events import Observation
from trustlayer.observe.traces import read_runs

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
