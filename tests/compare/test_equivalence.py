"""The structure tier's learned tolerance: how much a new member of a state may show that
no template explains is learned from how much the successful members showed of each other,
and never covers words no successful run showed; the matcher's quick set test loses no match."""

from devsets import EXAMPLES

from trustlayer.compare.equivalence import Allowances, decide, judge
from trustlayer.compare.index import index_of
from trustlayer.learn.learner import learn
from trustlayer.learn.profiles import learn_profile, learned_tolerance
from trustlayer.model import ModelState
from trustlayer.observe.fingerprints import Fingerprint
from trustlayer.observe.steps import run_steps
from trustlayer.observe.templates import word_tokens
from trustlayer.observe.traces import read_runs
from trustlayer.settings import Settings

JUPYTER = EXAMPLES / "jupyter"

EDITOR = {"T|notes.txt - Editor", "X|File", "X|Edit", "X|View", "X|Help", "X|hello world",
          "X|Ln 1, Col 1", "X|Spaces: 4", "X|UTF-8", "X|Plain Text", "X|notes.txt"}
# a side panel that some successful runs opened and others did not
PANEL = {"X|Outline", "X|No symbols found", "X|Close panel"}
# another panel, of words the successful runs showed elsewhere
KNOWN_EXTRA = {"X|File Edit", "X|Plain View"}
ERROR = {"X|Error: permission denied", "X|Retry"}


def state(*members: set[str]) -> ModelState:
    lines = [frozenset(m) for m in members]
    return ModelState("s0", "editor", learn_profile(lines), True,
                      tolerance=learned_tolerance(lines))


def fp(lines: set[str]) -> Fingerprint:
    return Fingerprint(frozenset(lines))


def known_words(*states: ModelState) -> frozenset[str]:
    return frozenset(w for s in states for t in s.profile.templates for w in word_tokens(t))


def test_members_that_all_look_alike_learn_no_tolerance():
    assert learned_tolerance([frozenset(EDITOR)] * 3) == 0.0
    assert learned_tolerance([frozenset(EDITOR)]) == 0.0


def test_a_panel_some_members_showed_is_learned_as_tolerance():
    editor = state(EDITOR, EDITOR | PANEL, EDITOR)
    assert editor.tolerance >= len(PANEL) / len(EDITOR | PANEL) - 1e-4


def test_known_extra_lines_within_the_learned_tolerance_match():
    editor = state(EDITOR, EDITOR | PANEL, EDITOR)
    words = known_words(editor)
    decision = decide(fp(EDITOR | KNOWN_EXTRA), editor, Settings(), Allowances(known_words=words))
    assert decision.same, decision.evidence
    # without the learned tolerance (one look-alike member each) the same lines are too many
    strict = state(EDITOR, EDITOR)
    assert not decide(fp(EDITOR | KNOWN_EXTRA), strict, Settings(),
                      Allowances(known_words=words)).same


def test_words_no_successful_run_showed_are_never_tolerated():
    editor = state(EDITOR, EDITOR | PANEL, EDITOR)
    decision = decide(fp(EDITOR | ERROR), editor, Settings(),
                      Allowances(known_words=known_words(editor)))
    assert not decision.same
    assert "X|Error: permission denied" in decision.evidence["unexplained"]


def test_without_known_words_only_the_settings_tolerance_applies():
    editor = state(EDITOR, EDITOR | PANEL, EDITOR)
    assert not decide(fp(EDITOR | KNOWN_EXTRA), editor, Settings()).same


def test_a_missing_salient_line_is_never_tolerated():
    editor = state(EDITOR, EDITOR | PANEL, EDITOR)
    renamed = {line.replace("notes.txt", "draft.md") for line in EDITOR}
    decision = decide(fp(renamed), editor, Settings(), Allowances(known_words=known_words(editor)))
    assert decision.verdict == "different" and decision.evidence["missing"]


def test_the_plausible_candidates_lose_no_match():
    """The matcher's set test (every exact salient line present) drops only states the
    structure tier calls different, on real frames of the example runs."""
    model = learn(read_runs([JUPYTER / "train"]))
    index, dropped = index_of(model), 0
    for run in read_runs([JUPYTER / "test"]):
        for step in run_steps(run, model.settings):
            fp = step.fingerprint
            candidates, plausible = index.candidates(fp), index.plausible(fp)
            assert plausible <= candidates
            same = {sid for sid in candidates if judge(model, fp, sid).same}
            assert same <= plausible, step.seq
            dropped += len(candidates - plausible)
    assert dropped > 0


def test_lines_some_successful_runs_showed_at_another_state_are_no_news():
    # a notice that some runs met (and others not) at the start, left open over the editor
    start = state({"X|Welcome", "X|Launcher"}, {"X|Welcome", "X|Launcher"} | PANEL)
    editor = state(EDITOR, EDITOR)
    extras = learn_profile([frozenset(PANEL)])
    words = known_words(start, editor)
    assert not decide(fp(EDITOR | PANEL), editor, Settings(), Allowances(known_words=words)).same
    assert decide(fp(EDITOR | PANEL), editor, Settings(),
                  Allowances(known_words=words, extras=extras)).same
    # ... but never in place of a line the state needs, nor beside an error
    assert not decide(fp(EDITOR - {"X|hello world"} | PANEL), editor, Settings(),
                      Allowances(known_words=words, extras=extras)).same
    assert not decide(fp(EDITOR | PANEL | ERROR), editor, Settings(),
                      Allowances(known_words=words, extras=extras)).same

