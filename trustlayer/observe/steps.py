"""A run as the matcher and the learner see it: fingerprinted states with the actions
that led to each."""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from trustlayer.observe.context import file_facts
from trustlayer.observe.fingerprints import Fingerprint, LineMemo, fingerprint
from trustlayer.observe.shared import in_order
from trustlayer.observe.templates import word_tokens
from trustlayer.observe.trace_events import Action, Event, Run, as_given
from trustlayer.settings import Settings

NO_ACTION = "(none)"
#: action signatures that only wait or look: the product stays as it is
PASSIVE = ("wait:", "scroll:")
TYPED = "type:"  # the signature of text the agent entered


@dataclass(frozen=True)
class Step:
    """One observed state of a run and the agent's actions since the previous state
    (empty when the screen changed on its own)."""

    seq: int
    ts: float
    fingerprint: Fingerprint
    actions: tuple[Action, ...]
    files_moved: bool = False  # the code snapshot changed with no action of the agent


def typed_words(signatures: Iterable[str]) -> frozenset[str]:
    """The words of the texts typed in `signatures` (``type:target:value``), as lines
    are split.

    >>> sorted(typed_words(["type:Name:Crime & Mystery", "click:Save:"]))
    ['Crime', 'Mystery']
    """
    return frozenset().union(*(word_tokens("X|" + signature.split(":", 2)[-1])
                               for signature in signatures if signature.startswith(TYPED)))


def action_signatures(step: Step) -> list[str]:
    """How a step was reached: its actions' signatures, or [NO_ACTION] when the screen
    changed on its own."""
    return [action.signature() for action in step.actions] or [NO_ACTION]


_VERBS = {"click": "clicked", "navigate": "opened", "scroll": "scrolled", "wait": "waited for",
          "tool": "called", "api": "called"}
#: WAI-ARIA roles a runner may put before an accessible name in a click's target (a
#: standard's words, no application's)
_ROLES = frozenset(("button", "link", "menu", "menuitem", "menubar", "tab", "checkbox",
                    "textbox", "option", "combobox", "radio", "switch", "treeitem", "listitem",
                    "cell", "row", "heading"))
_MENUS = frozenset(("menu", "menuitem", "menubar"))


def _clicked(target: str) -> str:
    """A click on `target` (``menu Settings``: a role, then the accessible name)."""
    role, _, name = target.partition(" ")
    if role not in _ROLES or not name:
        return f'clicked "{target}"'
    return f'clicked "{name}" in the menu' if role in _MENUS else f'clicked the "{name}" {role}'


def _opened(rest: str) -> str:
    """A navigation to the address in `rest` (``http://<host>/a?b``, maybe twice: as
    target and as value), as its path: its host is the same for every run."""
    _, found, after = rest.rpartition("://")
    return f"opened /{after.partition('/')[2]}" if found else f"opened {rest}"


def in_words(signature: str) -> str:
    """An action signature (``type:target:value``) as a person says it, to follow "the
    agent": ``clicked "Save"``, ``typed "hello" into editor``, ``pressed Enter``.

    >>> in_words("click:menu Settings:"), in_words("type:Name:Crime & Mystery")
    ('clicked "Settings" in the menu', 'typed "Crime & Mystery" into Name')
    >>> in_words("click:button Save:"), in_words("navigate:http://<host>/a?q=x:http://<host>/a?q=x")
    ('clicked the "Save" button', 'opened /a?q=x')
    >>> in_words("key:Name:Control+a"), in_words("tool:run_tests:pytest"), in_words(NO_ACTION)
    ('pressed Control+a in Name', 'called run_tests (pytest)', 'did nothing')
    """
    if signature == NO_ACTION:
        return "did nothing"
    kind, _, rest = signature.partition(":")
    target, _, value = rest.partition(":")
    if kind == "type":
        return f'typed "{value}"' + (f" into {target}" if target else "")
    if kind == "key":
        return f"pressed {value}" + (f" in {target}" if target else "")
    if kind in ("tool", "api"):
        return f"called {target}" + (f" ({value})" if value else "")
    if kind == "navigate":
        return _opened(rest)
    thing = target or value
    if kind == "click" and thing:
        return _clicked(thing)
    return f'{_VERBS.get(kind, kind)} "{thing}"' if thing else _VERBS.get(kind, kind)


def by_agent(step: Step) -> bool:
    """Whether the agent did something that led to `step` (not only waiting or looking:
    else the product changed the screen on its own)."""
    return any(not action.signature().startswith(PASSIVE) for action in step.actions)


class StepBuilder:
    """Turns events into steps one at a time (the run's first code snapshot is the
    baseline for file facts; the previous state's lines tell a step's context lines)."""

    def __init__(self, settings: Settings):
        self.settings = settings
        self.baseline_files: dict[str, str] | None = None
        self.pending: list[Action] = []
        self.previous_lines: frozenset[str] | None = None
        self.previous_facts: frozenset[str] | None = None  # (its file facts)
        self.memo = LineMemo()  # the last state's lines, to reuse (not a state to keep)

    def to_json(self, previous: frozenset[str] | None) -> dict[str, Any]:
        """What the next step needs, JSON-serialisable (:meth:`from_json` reads it back),
        with `previous` as the previous state's lines (all of them, or those the next step
        reads)."""
        # each action's fields copied, not its args: asdict() deep-copied them at every
        # checkpoint, and a frozen action's args are never changed
        return {"baseline_files": self.baseline_files,
                "pending": [dict(vars(action)) for action in self.pending],
                "previous_lines": None if previous is None else in_order(previous)}

    @classmethod
    def from_json(cls, settings: Settings, data: dict[str, Any]) -> StepBuilder:
        """A builder from :meth:`to_json`."""
        builder = cls(settings)
        builder.baseline_files = data["baseline_files"]
        builder.pending = [Action(**action) for action in data["pending"]]
        previous = data.get("previous_lines")
        if previous is not None:
            builder.previous_lines = frozenset(previous)
            builder.previous_facts = file_facts(builder.previous_lines)
        return builder

    def feed(self, event: Event) -> Step | None:
        """Return the step completed by `event`, if it is a state."""
        if event.action is not None:  # an action: part of the next step
            self.pending.append(event.action)
            return None
        observation = event.observation
        if observation is None:  # not a state
            return None
        if observation.files is not None and self.baseline_files is None:
            self.baseline_files = dict(observation.files)
        actions = tuple(self.pending)
        printed = fingerprint(observation, self.settings.thumbnail_size, self.baseline_files,
                              self.previous_facts, actions, self.memo)
        moved = not actions and self.previous_facts is not None \
            and printed.facts != self.previous_facts
        self.pending, self.previous_lines, self.previous_facts = [], printed.lines, printed.facts
        return as_given(Step, seq=event.seq, ts=event.ts, fingerprint=printed, actions=actions,
                        files_moved=moved)


def run_steps(run: Run, settings: Settings) -> list[Step]:
    """All steps of a run, in order."""
    builder = StepBuilder(settings)
    return [step for event in run.events if (step := builder.feed(event)) is not None]
