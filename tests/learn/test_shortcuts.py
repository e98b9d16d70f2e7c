"""The shortcuts learning takes give what the long way gives: leave-one-out tolerance only
for members with lines of their own, and one similarity per distinct pair of states."""
from hypothesis import given, settings
from hypothesis import strategies as st

from trustlayer.learn.align import Shape, _align, similarity
from trustlayer.learn.profiles import learn_profile, learned_tolerance
from trustlayer.observe.canonical import content_lines
from trustlayer.observe.fingerprints import Fingerprint
from trustlayer.settings import Settings

# lines alike enough to become templates with wildcards, and some that stand alone
LINES = ("X|saved report . txt", "X|saved notes . txt", "X|saved draft . txt",
         "X|3 passed in <dur>", "X|4 passed in <dur>", "X|Error : disk full",
         "F|def main ( ) :", "F|def cli ( ) :", "A|button Save", "A|button Cancel")
members = st.lists(st.frozensets(st.sampled_from(LINES), min_size=1), min_size=2, max_size=6)


def leave_each_out(members: list[frozenset[str]]) -> float:
    """The tolerance the long way: a profile of the others for every member."""
    shares = []
    for left_out, member in enumerate(members):
        others = learn_profile([m for i, m in enumerate(members) if i != left_out])
        _, unexplained = others.compare(member)
        shares.append(min(1.0, len(unexplained) / max(1, len(content_lines(member)))))
    return round(max(shares), 4)


@settings(max_examples=200, deadline=None)
@given(members)
def test_tolerance_is_the_leave_one_out_tolerance(members):
    assert learned_tolerance(members) == leave_each_out(members)


def test_a_member_with_a_line_of_its_own_sets_the_tolerance():
    members = [frozenset({"X|a", "X|b"}), frozenset({"X|a", "X|b"}),
               frozenset({"X|a", "X|b", "X|toast"})]
    assert learned_tolerance(members) == leave_each_out(members) == 0.3333


runs = st.lists(st.lists(st.frozensets(st.sampled_from(LINES), min_size=1), min_size=1,
                         max_size=5), min_size=2, max_size=4)


@settings(max_examples=100, deadline=None)
@given(runs)
def test_alignment_with_known_similarities_is_the_alignment(runs):
    settings_ = Settings()
    keys: dict[tuple, int] = {}
    shapes = [[Shape(Fingerprint(lines), keys) for lines in run] for run in runs]
    known: dict[tuple[int, int], float] = {}
    for left in shapes:
        for right in shapes:
            remembered = _align(left, right, settings_, known)
            fresh = _align(left, right, settings_, {})
            assert remembered == fresh
    # every remembered value is the similarity of the states it is kept for
    by_key = {shape.key: shape for run in shapes for shape in run}
    for (a, b), value in known.items():
        assert value == similarity(by_key[a], by_key[b], settings_)
