"""A set of profiles answers for each of its profiles what the profile alone answers,
however often and in whatever order the states are asked about, also once it has
forgotten the lines it explained (a set remembers each state it was asked about)."""
from unittest import mock

from hypothesis import given, settings
from hypothesis import strategies as st

from trustlayer.observe import profile_set
from trustlayer.observe.profile_set import ProfileSet
from trustlayer.observe.templates import WILDCARD, Profile

WORDS = ("open", "saved", "error", "3")


def _line(words: list[str]) -> str:
    return "X|" + " ".join(words)


lines = st.lists(st.sampled_from(WORDS), min_size=1, max_size=3).map(_line)
templates = st.lists(st.sampled_from((*WORDS, WILDCARD)), min_size=1, max_size=3).map(_line)
profiles = st.lists(st.lists(st.tuples(templates, st.booleans()), min_size=1, max_size=4,
                             unique_by=lambda pair: pair[0]), min_size=1, max_size=3)
states = st.lists(st.frozensets(lines, max_size=5), min_size=1, max_size=5)


def _profile(pairs: list[tuple[str, bool]]) -> Profile:
    return Profile([template for template, _ in pairs], [salient for _, salient in pairs])


@settings(max_examples=200, deadline=None)
@given(profiles, states, st.lists(st.tuples(st.integers(0, 4), st.integers(0, 2)), min_size=1,
                                  max_size=12), st.sampled_from((2, 1 << 14)))
def test_a_set_answers_as_each_profile_alone(pairs, shown, asked, max_lines):
    joined = [_profile(p) for p in pairs]
    alone = [_profile(p) for p in pairs]
    with mock.patch.object(profile_set, "MAX_LINES", max_lines):  # 2: forgets at every state
        ProfileSet(joined)
        for state_number, profile_number in asked:  # one profile at a time, in any order
            state = shown[state_number % len(shown)]  # the very set again, as runs share them
            mine, its = (profiles[profile_number % len(pairs)] for profiles in (joined, alone))
            assert mine.compare(state) == its.compare(state)
            assert mine.shows_every_salient(state) == its.shows_every_salient(state)
            assert mine.lacking(state) == its.lacking(state)
