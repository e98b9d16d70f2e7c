"""Whether an observed state is evidence that a run reached its goal: one of the states
where successful runs ended, or like all their last states together, or at their place."""
from __future__ import annotations

from trustlayer.compare.equivalence import tolerated
from trustlayer.compare.index import index_of, remembered
from trustlayer.model import Model
from trustlayer.observe.canonical import PLACE_PREFIXES
from trustlayer.observe.fingerprints import Fingerprint

# successful runs whose last states differ in more than half their lines (left out one by
# one) share no shape of an end: then only the ends themselves accept
ENDING_MAX_TOLERANCE = 0.5


def ends_like_success(model: Model, fp: Fingerprint, ids: list[str],
                      own_words: frozenset[str] = frozenset()) -> bool:
    """Whether an observed state (matching model states `ids`) is evidence of the goal:
    one of the states where successful runs ended (showing what every run ending there
    showed of its finished work, ``model.end_evidence``), or like all their last states
    together (``model.ending``: every line they all show, nothing beyond the variety they
    showed among themselves, no learned value changed)."""
    if not model.accepting:
        return True
    # remembered by the model's index like the states found: asked of every state
    ended = frozenset(ids).intersection(model.accepting)
    index = index_of(model)
    key = (fp.lines, ended, own_words)
    found = index.ends.get(key)
    if found is None:
        found = remembered(index.ends, key, _ends_like_success(model, fp, ended, own_words),
                           len(fp.lines))
    return found


def _ends_like_success(model: Model, fp: Fingerprint, ended: frozenset[str],
                       own_words: frozenset[str]) -> bool:
    for state_id in ended:
        profile, required = model.states[state_id].profile, model.end_evidence.get(state_id)
        if not required or {profile.templates[i] for line in fp.lines
                            if (i := profile.template_of(line)) is not None} >= set(required):
            return True
    if ended:  # such a state, but not finished as every run ending there was
        return False
    ending = model.ending
    if ending is None or not ending.structural or not fp.has_structure \
            or ending.tolerance > ENDING_MAX_TOLERANCE:
        return False
    if not ending.profile.shows_every_salient(fp.lines):
        return False
    return tolerated(ending.profile.unexplained(fp.lines), fp, ending, model.settings,
                      index_of(model).known_words | own_words)


def at_an_end_place(model: Model, fp: Fingerprint) -> bool:
    """Whether an observed state is where successful runs ended, as a place: its title and
    URL are explained by the templates of their last states (``model.ending``), with every
    place line they all showed, and it shows no word none of them ever showed.

    For a run that gave every answer successful runs gave (``model.required_outputs``):
    the answer is its evidence of the goal, and a page at their end's place but of another
    shape (another correct query, other columns) ends as they end."""
    ending = model.ending
    if ending is None or not ending.structural:
        return False
    salient = [t for t in ending.profile.salient_templates if t.startswith(PLACE_PREFIXES)]
    place = [line for line in fp.lines if line.startswith(PLACE_PREFIXES)]
    if not salient or not place:
        return False
    missing, unexplained = ending.profile.compare(place)
    return not unexplained and not set(missing) & set(salient) \
        and not index_of(model).novelty(fp)
