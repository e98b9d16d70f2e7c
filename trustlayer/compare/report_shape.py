"""A tool's report asked for another way: the same report with other counts (a narrower
test selection, tests added), for milestones that report on the finished work."""
from __future__ import annotations

from functools import lru_cache

from trustlayer.compare.equivalence import tolerated
from trustlayer.compare.index import index_of
from trustlayer.model import Model
from trustlayer.observe.fingerprints import Fingerprint
from trustlayer.observe.templates import WILDCARD, Profile, shape_of, split_line


def like_in_shape(model: Model, fp: Fingerprint, state_id: str) -> bool:
    """Whether an observed state is model state `state_id`'s report asked for another way:
    the agent's request differs from every successful run's (a context line of the state,
    such as the command it typed, that the templates do not explain), and each salient
    line it lacks is there with other counts (:func:`trustlayer.observe.templates.shape_of`:
    ``45 passed`` for ``141 passed``, a shorter progress bar); the rest as :func:`decide`
    tolerates. For milestones that are a tool's report on the finished work (the whole
    suite's result, where a run tested the files it changed). The same request is met only
    with larger counts (:func:`grown`: tests added); a test deleted shows as one fewer.
    Whatever the counts, a report that still shows what successful runs fixed fails the
    run (:mod:`trustlayer.judge.signs`)."""
    state = model.states[state_id]
    if not state.structural or not fp.has_structure:
        return False
    profile = state.profile
    missing, unexplained = profile.compare(fp.lines)
    if not missing:
        return False
    same_request = fp.context.isdisjoint(unexplained)  # templates explain each
    in_shape = _in_shape(tuple(dict.fromkeys(shape_of(template) for template in missing)))
    reshaped = {line for line in unexplained if in_shape.template_of(shape_of(line)) is not None}
    if in_shape.compare({shape_of(line) for line in reshaped})[0]:
        return False
    if same_request and not all(any(grown(line, template) for template in missing)
                                for line in reshaped):
        return False
    rest = [line for line in unexplained if line not in reshaped and line not in fp.context]
    return tolerated(rest, fp, state, model.settings, index_of(model).known_words)


def grown(line: str, template: str) -> bool:
    """Whether `line` is `template` with each count it holds at least as large: the same
    request reporting more of the same (``154 passed`` for ``151 passed``: the agent
    added tests), not fewer (a test deleted).

    >>> grown("X|154 passed in <dur>", "X|151 passed in <dur>")
    True
    >>> grown("X|150 passed in <dur>", "X|151 passed in <dur>")
    False
    """
    (prefix, body), (expected_prefix, expected) = split_line(line), split_line(template)
    if prefix != expected_prefix or len(body) != len(expected):
        return False
    return all(mine == theirs or theirs == WILDCARD
               or mine.isdigit() and theirs.isdigit() and int(mine) >= int(theirs)
               for mine, theirs in zip(body, expected))


@lru_cache(maxsize=1 << 10)  # a milestone's missing lines repeat from state to state
def _in_shape(shapes: tuple[str, ...]) -> Profile:
    return Profile(list(shapes), [True] * len(shapes))
