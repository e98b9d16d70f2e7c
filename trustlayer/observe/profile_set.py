"""The profiles one observed state is compared with, explained together.

An observed state is compared with several model states (the candidates its lines find),
with the states where successful runs end and with the next milestone: each a
:class:`trustlayer.observe.templates.Profile`, and many of them holding the same templates
(the file facts of one project, a page's frame). A :class:`ProfileSet` explains each line
once for every profile of a model (one lookup of its exact form, each distinct wildcard
template of its length tried once) and remembers it as bits of the salient templates it
shows; what a state lacks of a profile's salient templates is then one operation on the
bits of its lines. The answers are those each profile gives alone.
"""
from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import reduce
from operator import or_

from trustlayer.observe.templates import (
    WILDCARD,
    Profile,
    bit_indices,
    leading_key,
    render,
    split_line,
)

MAX_LINES = 1 << 14  # remembered lines per set
MAX_STATES = 1 << 10  # remembered states (line sets) per set


class ProfileSet:
    """Profiles explained together (see the module docstring); joining a set makes a
    profile ask it (:meth:`Profile.compare`, :meth:`Profile.contradictions`).

    Bits: one per form of an exact salient template (shared by the profiles holding it: a
    line of that form shows it in each), one per other salient template of a profile (a
    line shows it when it is the template the profile chooses for the line)."""

    def __init__(self, profiles: Sequence[Profile]):
        self._exact: dict[str, list[tuple[int, int]]] = {}  # form -> (profile, template)
        self._wild: dict[tuple[str, int], dict[tuple[str, ...], list[tuple[int, int]]]] = {}
        self._rest: dict[tuple[str, tuple[str, ...]], list[tuple[int, int]]] = {}
        self._form_bit: dict[str, int] = {}  # form of an exact salient template -> its bit
        self._bit: dict[tuple[int, int], int] = {}  # (profile, other salient template) -> bit
        self._salient: list[tuple[int, dict[int, int]]] = []  # per profile: mask, bit -> template
        for number, profile in enumerate(profiles):
            mask, templates = 0, {}
            for form, index in profile._exact.items():
                self._exact.setdefault(form, []).append((number, index))
                if profile.salient[index]:
                    bit = self._form_bit.setdefault(form, len(self._form_bit) + len(self._bit))
                    mask |= 1 << bit
                    templates[bit] = index
            exact = set(templates.values())
            for index in bit_indices(profile._salient):
                if index not in exact:  # (a duplicate of an exact one: never shown)
                    bit = self._bit[(number, index)] = len(self._form_bit) + len(self._bit)
                    mask |= 1 << bit
                    templates[bit] = index
            self._salient.append((mask, templates))
            for shape, wild in profile._wild.items():
                bodies = self._wild.setdefault(shape, {})
                for index, body in wild:
                    bodies.setdefault(body, []).append((number, index))
            for key, index in profile._rest.items():
                self._rest.setdefault(key, []).append((number, index))
            profile.shared = (self, number)
        self._bits: dict[str, int] = {}  # line -> the bits of the salient templates it shows
        self._unexplained: list[set[str]] = [set() for _ in profiles]  # per profile
        self._last: _Observed | None = None
        #: what it knows of each state asked about (a fleet's runs show the very same line
        #: sets again: see trustlayer.observe.shared), the oldest forgotten first
        self._states: dict[frozenset[str], _Observed] = {}

    def _explain(self, line: str) -> int:
        """The bits of the salient templates that `line` shows, at most one per profile
        (as :meth:`Profile.template_of` chooses: its exact template, else its first
        wildcard one, else its ``key: <**>`` one); it is remembered as unexplained for
        the profiles none of whose templates explains it."""
        prefix, body = split_line(line)
        form = render(prefix, body)
        chosen = dict(self._exact.get(form, ()))
        wild: dict[int, int] = {}
        for template, holders in self._wild.get((prefix, len(body)), {}).items():
            if all(t == WILDCARD or t == b for t, b in zip(template, body)):
                for number, index in holders:
                    if number not in chosen and index < wild.get(number, index + 1):
                        wild[number] = index
        chosen.update(wild)
        key = leading_key(body)
        for number, index in self._rest.get((prefix, key), ()) if key else ():
            chosen.setdefault(number, index)
        for number, unexplained in enumerate(self._unexplained):
            if number not in chosen:
                unexplained.add(line)
        bits = 1 << self._form_bit[form] if form in self._form_bit else 0
        for number, index in chosen.items():
            bit = self._bit.get((number, index))
            if bit is not None:
                bits |= 1 << bit
        return bits

    def form_bits(self, forms: Iterable[str]) -> int | None:
        """The bits of these forms of exact salient templates; None if one is none."""
        bits = 0
        for form in forms:
            if form not in self._form_bit:
                return None
            bits |= 1 << self._form_bit[form]
        return bits

    def shown(self, lines: frozenset[str]) -> int:
        """The bits of the salient templates that `lines` show."""
        return self._observed(lines).shown

    def shows_every_salient(self, lines: frozenset[str], number: int) -> bool:
        """Whether `lines` show every salient template of profile `number`."""
        return not self._salient[number][0] & ~self._observed(lines).shown

    def explained(self, lines: frozenset[str], number: int) -> tuple[int, frozenset[str]]:
        """For profile `number`: its salient templates that no line of `lines` shows (bit
        i: template i), and the lines none of its templates explains."""
        observed = self._observed(lines)
        answer = observed.answers.get(number)
        if answer is None:
            mask, templates = self._salient[number]
            missing = 0
            for bit in bit_indices(mask & ~observed.shown):
                missing |= 1 << templates[bit]
            answer = observed.answers[number] = missing, lines & self._unexplained[number]
        return answer

    def _observed(self, lines: frozenset[str]) -> _Observed:
        """What this set knows of the state with `lines` (the last one asked about)."""
        last = self._last
        if last is not None and last.lines is lines:
            return last
        observed = self._states.get(lines)
        if observed is None:
            observed = self._states[lines] = self._explain_all(lines)
            if len(self._states) > MAX_STATES:
                del self._states[next(iter(self._states))]
        self._last = observed
        return observed

    def _explain_all(self, lines: frozenset[str]) -> _Observed:
        known = self._bits
        new = lines.difference(known)
        if len(known) + len(new) > MAX_LINES:  # (the states known read the lines forgotten)
            known.clear()
            self._states.clear()
            for unexplained in self._unexplained:
                unexplained.clear()
            new = lines
        for line in new:
            known[line] = self._explain(line)
        return _Observed(lines, reduce(or_, map(known.__getitem__, lines), 0))


@dataclass
class _Observed:
    """An observed state's lines, the bits of the salient templates they show, and the
    answers given so far for it (profile number -> answer)."""

    lines: frozenset[str]
    shown: int
    answers: dict[int, tuple[int, frozenset[str]]] = field(default_factory=dict)
