"""State names a person can read, on every dev task's model."""
import re

import pytest
from devsets import REPO, SHARED

from trustlayer.learn.learner import learn
from trustlayer.observe.traces import read_runs

TASKS = ["jupyter-dev", "coding-dev", "coding-dev2/slugify-cli-flag",
         "coding-dev2/slugify-fix-regex-bug", "datasette-dev/ds-countries-filter-count",
         "datasette-dev/ds-json-export-row"]
TOKENISED = re.compile(r"\w ' \w|\w \. \w|\w - \w\w* - |\( \w|\w \)")  # "runner ' s", "a . py"


@pytest.fixture(scope="module", params=TASKS + ["examples/tool-calling"])
def model(request):
    train = (REPO / request.param if request.param.startswith("examples") else
             SHARED / request.param) / "train"
    return learn(read_runs([train]))


def test_names_are_distinct_and_readable(model):
    names = [state.name for state in model.states.values()]
    assert len(set(names)) == len(names)
    for name in names:
        assert "<" not in name and "*" not in name, name  # no wildcard, no <ago> placeholder
        assert not re.search(r"\(s\d+\)", name), name  # no internal state ids
        assert not TOKENISED.search(name), name  # spacing as the run showed it
        assert 0 < len(name) <= 150, name


def test_milestones_are_named_by_words_not_numbers(model):
    for state_id in model.essential:
        name = model.name(state_id)
        assert re.search(r"[^\W\d_]{3,}", name), name
        detail = name.rsplit(": ", 1)[-1]
        digits = sum(ch.isdigit() for ch in detail) / max(1, sum(ch.isalnum() for ch in detail))
        assert digits <= 0.25 or detail == name, name  # no "Ln 1, Col 1" status fragment
