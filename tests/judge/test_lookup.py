"""Which model states an observed state is: what the index remembers of a lookup, and what
that memo is keyed by."""
from __future__ import annotations

import dataclasses

import pytest
from devsets import EXAMPLES

from trustlayer.compare.index import index_of
from trustlayer.judge.lookup import matching_states
from trustlayer.learn.learner import learn
from trustlayer.observe.fingerprints import Fingerprint, fingerprint
from trustlayer.observe.traces import read_runs

NOTHING_TYPED: tuple[tuple[str, ...], ...] = ()


@pytest.fixture(scope="module")
def jupyter():
    """The examples' JupyterLab model, and the fingerprints of a test run's states with
    text and a screenshot."""
    model = learn(read_runs([EXAMPLES / "jupyter" / "train"]))
    run = read_runs([EXAMPLES / "jupyter" / "test"])[0]
    prints = [fingerprint(e.observation, model.settings.thumbnail_size) for e in run.states]
    return model, [fp for fp in prints if fp.has_structure and fp.image_sha is not None]


def _shot(fp: Fingerprint, sha: str, phash: int) -> Fingerprint:
    """`fp` with another screenshot: other bytes (`sha`), pHash and thumbnail."""
    return dataclasses.replace(fp, image_sha=sha, phash=phash, thumbnail=bytes(16 * 16),
                               image=None)


def _found(model, fp: Fingerprint, typed=NOTHING_TYPED) -> list[str]:
    return matching_states(model, fp, typed, model.essential[0], frozenset(), None, 0)[0]


def test_a_screen_with_the_same_text_and_unknown_bytes_is_looked_up_once(jupyter):
    model, prints = jupyter
    index, known = index_of(model), set(index_of(model).by_image)
    text_states = [fp for fp in prints if fp.image_sha not in known]
    assert text_states
    for number, fp in enumerate(text_states):
        first = _found(model, _shot(fp, f"{number:064x}", 0))
        remembered = len(index.found)
        # a pixel changed (a clock, a cursor): other bytes, another pHash, the same text
        assert _found(model, _shot(fp, f"{number + 1000:064x}", 2**64 - 1)) == first
        assert len(index.found) == remembered
        assert _found(model, fp) == first


def test_a_screen_whose_bytes_a_state_holds_is_looked_up_by_them_too(jupyter):
    model, prints = jupyter
    index = index_of(model)
    sha = next(iter(index.by_image))
    fp = prints[0]
    before = len(index.found)
    _found(model, _shot(fp, f"{7:064x}", 0))
    _found(model, _shot(fp, sha, 0))  # the exact tier may call it the state holding them
    assert len(index.found) == before + 2


def test_what_the_agent_typed_keeps_the_screenshot_in_the_key(jupyter):
    """With a typed text a state may be found by its pHash (a line it changed is no exact
    hit), so the screenshot stays in what is remembered."""
    model, prints = jupyter
    index, typed = index_of(model), (("hello", "world"),)
    fp = next(fp for fp in prints if fp.image_sha not in index.by_image)
    before = len(index.found)
    _found(model, _shot(fp, f"{8:064x}", 0), typed)
    _found(model, _shot(fp, f"{9:064x}", 2**64 - 1), typed)
    assert len(index.found) == before + 2
