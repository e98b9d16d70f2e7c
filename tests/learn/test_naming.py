"""State names a person can read, on every dev task's model."""
import re

import pytest
from devsets import DATA, DEV_TASKS, DEVTRACES, EXAMPLES, SHARED, SLICE_TASKS, dev

from trustlayer.learn.learner import learn
from trustlayer.learn.naming import MAX_NAME
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
        assert 0 < len(name) <= MAX_NAME, name
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
PANEL = re.compile(r'^A\|- tabpanel " (.+?) "')
HEADING = re.compile(r'^A\|- heading " (.+?) "')
SEPARATOR = re.compile(r"\s+[-|]\s+")


def plain(text: str) -> str:
    """`text` without spaces: a template's tokens (``untitled . txt``) as shown."""
    return re.sub(r"\s+", "", text)


def test_names_are_no_button_label_number_or_bare_application_name(model):
    """Names a person would give: no ``(2)``, no wildcard, not the application's name
    alone (the title part every titled state shares), not a control's label unless the
    page's title or the open panel's name says it."""
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
        panels = {plain(m.group(1)) for t in state.profile.templates
                  if (m := PANEL.match(t) or HEADING.match(t))}
        # a label the page's title says, or the open view's (a tab names its panel, and
        # the heading that repeats the tab's label)
        assert detail not in labels or detail in panels \
            or any(detail in plain(t) for t in titles[sid]), name


#: a control's or a table part's line, YAML-quoted or not (``'menuitemcheckbox "Spaces: 1"'``)
LABELLED = re.compile(r"""^A\|- '? ?(?:button|link|menuitem\w*|tab|option|checkbox|radio|switch|"""
                      r"""row|cell|gridcell|columnheader|rowheader) " (.+?) \"""")


def test_no_name_is_completed_by_a_piece_of_a_control_or_a_table_row(model):
    """A shortcut split off a menu item (``Alt+Up``), a row or a cell of a table say
    nothing of where the agent is: never the detail that tells a state apart (a heading
    may repeat the label of the tab that opened its panel)."""
    for state in model.states.values():
        head, _, detail = state.name.rpartition(": ")
        titles = [plain(t[2:]) for t in state.profile.templates if t.startswith("T|")]
        headings = {plain(m.group(1)) for t in state.profile.templates if (m := HEADING.match(t))}
        if not head or re.search(r"\(\d+ of \d+\)$", detail) or plain(detail) in headings \
                or any(plain(detail) in title for title in titles):  # the page's own title
            continue
        labels = {plain(m.group(1)) for t in state.profile.templates if (m := LABELLED.match(t))}
        piece = plain(detail.strip("…"))
        assert not piece or not any(piece in label for label in labels), state.name


CELL = re.compile(r"""^A\|- '? ?(?:cell|gridcell) " (.+?) \"""")


def test_no_name_is_completed_by_a_table_row_the_tree_did_not_hold(model):
    """A long table's tree holds only its first rows; the rows the page was scrolled to
    are in its visible text alone (``Laos Asia 1``): data all the same, never a name."""
    cells = {plain(m.group(1)) for state in model.states.values()
             for t in state.profile.templates if (m := CELL.match(t))}
    for state in model.states.values():
        words = state.name.rpartition(": ")[2].split()
        assert not (len(words) > 2 and words[-1].isdigit() and plain(words[-2]) in cells), \
            state.name


@DEVTRACES
def test_a_panel_is_named_by_its_heading_not_its_placeholder_nor_a_gallery_section():
    """The open side panel's heading names it, not the placeholder heading below it (a
    lower level); the headings of a gallery's sections, shown together, name none."""
    model = learn(read_runs([SHARED / "jupyter-dev" / "train"]))
    details = [state.name.rpartition(": ")[2] for state in model.states.values()]
    assert "Table of Contents" in details
    assert not {"No Headings", "Other", "Notebook", "Console"} & set(details), details


@DEVTRACES
def test_an_open_menu_is_named_by_the_click_that_opened_it_on_its_page():
    """A menu's tree has no name: the menu a click opened names the screen (``File
    menu``), on the page it opened over (two pages, two names)."""
    names = {state.name for state in learn(read_runs([SHARED / "jupyter-dev" / "train"]))
             .states.values()}
    menus = {name for name in names if name.endswith(" menu")}
    assert {name.rpartition(": ")[2] for name in menus} >= {"File menu", "New menu"}, names
    assert len({name for name in menus if name.endswith("File menu")}) == 2, names


@DEVTRACES
def test_a_page_without_a_title_is_named_by_its_address():
    """A JSON export has no title, heading or tab: its address names it, as the address
    bar shows it, not one of its keys (``columns_1: "title"``)."""
    model = learn(read_runs([SHARED / "datasette-dev" / "ds-json-export-row" / "train"]))
    names = {model.name(state_id) for state_id in model.accepting}
    assert "/atlas/books/243.json" in names, names
