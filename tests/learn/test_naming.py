"""State names a person can read, on every dev task's model."""
import re

import pytest
from devsets import DATA, DEV_TASKS, EXAMPLES, SHARED, SLICE_TASKS, dev

from trustlayer.learn.learner import learn
from trustlayer.observe.traces import read_runs

TOKENISED = re.compile(r"\w ' \w|\w \. \w|\w - \w\w* - |\( \w|\w \)")  # "runner ' s", "a . py"


@pytest.fixture(scope="module", params=[
    EXAMPLES / "tool-calling", *(DATA / name for name in SLICE_TASKS),
    *(dev(SHARED / name, id=name) for name in DEV_TASKS)], ids=lambda path: path.name)
def model(request):
    return learn(read_runs([request.param / "train"]))


def test_names_are_distinct_and_readable(model):
    names = [state.name for state in model.states.values()]
    assert len(set(names)) == len(names)
    for name in names:
        assert "<*>" not in name and not re.search(r"<[a-z]+>", name), name  # no wildcard, no <ago>
        assert not re.search(r"\(s\d+\)", name), name  # no internal state ids
        assert not TOKENISED.search(name), name  # spacing as the run showed it
        assert 0 < len(name) <= 150, name
        assert not any(run_id in name for run_id in model.training_runs), name  # read, not where


def test_milestones_are_named_by_words_not_numbers(model):
    for state_id in model.essential:
        name = model.name(state_id)
        assert re.search(r"[^\W\d_]{3,}", name), name
        detail = name.rsplit(": ", 1)[-1]
        digits = sum(ch.isdigit() for ch in detail) / max(1, sum(ch.isalnum() for ch in detail))
        assert digits <= 0.25 or detail == name, name  # no "Ln 1, Col 1" status fragment


#: a control's line in the accessibility tree (its label names what the agent may do)
CONTROL = re.compile(r'^A\|- (?:button|link|menuitem|tab|option|checkbox|radio|switch) " (.+?) "')
SEPARATOR = re.compile(r"\s+[-|]\s+")


def plain(text: str) -> str:
    """`text` without spaces: a template's tokens (``untitled . txt``) as shown."""
    return re.sub(r"\s+", "", text)


def test_names_are_no_button_label_number_or_bare_application_name(model):
    """Names a person would give: no ``(2)``, no wildcard, not the application's name
    alone (the title part every titled state shares), not a control's label unless the
    page's title says it."""
    titles = {sid: [t[2:] for t in state.profile.templates if t.startswith("T|")]
              for sid, state in model.states.items()}
    parts = [set(SEPARATOR.split(found[0])) for found in titles.values() if found]
    shared = set.intersection(*parts) if len(parts) > 1 else set()
    for sid, state in model.states.items():
        name = state.name
        assert not re.search(r"\(\d+\)", name) and "<*>" not in name, name
        assert plain(name) not in {plain(app) for app in shared}, name
        labels = {plain(m.group(1)) for t in state.profile.templates if (m := CONTROL.match(t))}
        detail = plain(name.rsplit(": ", 1)[-1])
        assert detail not in labels or any(detail in plain(t) for t in titles[sid]), name
