"""Learned line templates: which parts of a state vary between successful runs, which must match.

The members of one model state are corresponding states of different successful runs.
Lines that differ between members in a few word positions, and never stand together in
one member, are variants of one slot: they become one template with a wildcard ``*`` at
the differing positions (``untitled.txt`` / ``hello.txt`` -> ``<*> . txt``). A template
found in every member is *salient* (it must match); one found in some members is
*optional*. Anything a new state shows that no template explains is *unexplained*.
Nothing here knows about any particular application: the variation is learned
(:mod:`trustlayer.learn.profiles`); here, templates explain the lines of an observation.
"""
from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, cast

from trustlayer.observe.canonical import tokens

WILDCARD = "<*>"  # one token: a literal "*" in a line stays a literal
REST = "<**>"  # stands for the whole value after a "key:" that successful runs varied
MAX_KEY_TOKENS = 4
MAX_SEEN_LINES = 1 << 14  # remembered answers per profile


@lru_cache(maxsize=1 << 16)
def split_line(line: str) -> tuple[str, tuple[str, ...]]:
    """A canonical line or template as its prefix and tokens (remembered)."""
    prefix, _, body = line.partition("|")
    return prefix, tokens(body)


def bit_indices(bits: int) -> Iterator[int]:
    """The positions of the set bits of `bits`, lowest first.

    >>> list(bit_indices(0b10110))
    [1, 2, 4]
    """
    while bits:
        low = bits & -bits
        yield low.bit_length() - 1
        bits ^= low


def render(prefix: str, template: tuple[str, ...]) -> str:
    """A line or template from its prefix and tokens (:func:`split_line` undone)."""
    return f"{prefix}|{' '.join(template)}"


def is_exact(template: str) -> bool:
    """True when a rendered template has no wildcard: it matches one line form only."""
    return WILDCARD not in template and REST not in template


@lru_cache(maxsize=1 << 16)
def template_form(line: str) -> str:
    """A canonical line as an exact template renders it (tokens joined by spaces)."""
    return render(*split_line(line))


@lru_cache(maxsize=1 << 16)
def word_tokens(line: str) -> frozenset[str]:
    """The words (letters, at least three) of a canonical line or template; of an
    accessibility-tree line, without its role (``listitem``, ``columnheader``: how a
    thing is drawn, not what it says).

    >>> sorted(word_tokens('A|- listitem "Africa 8"'))
    ['Africa']
    """
    prefix, _, body = line.partition("|")
    words = tokens(body)
    if prefix == "A" and words[:1] == ("-",):
        words = words[2:]
    return frozenset(t for t in words if len(t) >= 3 and t.isalpha())


def says_something(line: str) -> bool:
    """Whether a canonical line or template holds a letter or a digit beyond an
    accessibility role: a bare ``-`` in an empty cell, a rule of dashes or an unnamed
    ``table`` says nothing, and is there or not by the agent's own choices (a description
    filled in, one row left by a search).

    >>> says_something('A|- cell " - "'), says_something("A|- table"), says_something("X|42")
    (False, False, True)
    """
    prefix, body = split_line(line)
    if prefix == "A" and body[:1] == ("-",):
        body = body[2:]
    return any(token in (WILDCARD, REST) or any(c.isalnum() for c in token) for token in body)


@lru_cache(maxsize=1 << 16)
def shape_of(line: str) -> str:
    """A canonical line or template with its numbers as wildcards and a run of one mark
    as one mark (a progress bar): what a tool's report looks like whatever it counted.

    >>> shape_of("X|45 passed , 5 skipped in <dur>"), shape_of("X|. . . . [ 35 % ]")
    ('X|<*> passed , <*> skipped in <dur>', 'X|. [ <*> % ]')
    """
    prefix, body = split_line(line)
    shaped: list[str] = []
    for token in body:
        token = WILDCARD if token.isdigit() else token
        if not (shaped and token == shaped[-1] and not token[:1].isalnum()
                and token != WILDCARD):
            shaped.append(token)
    return render(prefix, tuple(shaped))


def leading_key(body: tuple[str, ...]) -> tuple[str, ...] | None:
    """The leading ``key:`` or ``key =`` of a line (at most MAX_KEY_TOKENS tokens, with a
    value after it), or None."""
    for i, token in enumerate(body[:MAX_KEY_TOKENS]):
        if token in (":", "=") and i > 0:
            return body[: i + 1] if i + 1 < len(body) else None
    return None


@lru_cache(maxsize=1 << 16)
def field_of(line: str) -> str:
    """The field a canonical line fills: its prefix and leading ``key:`` when it has one
    (``X|price: 90`` -> ``X|price :``), else the whole line."""
    prefix, body = split_line(line)
    key = leading_key(body)
    return render(prefix, key) if key else line


@dataclass
class Profile:
    """The learned templates of one model state.

    Attributes
    ----------
    templates : list of str
        Rendered templates (``"X|<*> . txt"``), wildcard tokens as ``<*>``, a varied value
        after a key as ``<**>``.
    salient : list of bool
        For each template, whether every member showed it.
    """

    templates: list[str] = field(default_factory=list)
    salient: list[bool] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._seen: dict[str, int | None] = {}  # line -> template_of(line), bounded
        self._unexplained: set[str] = set()  # ... the lines of it that no template explains
        self._last: tuple[frozenset[str], int, frozenset[str]] | None = None
        self._near: dict[str, tuple[int, ...]] = {}  # see contradictions, bounded
        self._salient = sum(1 << i for i, salient in enumerate(self.salient) if salient)
        self.shared: tuple[Any, int] | None = None  # (its ProfileSet, its number there)
        self._exact: dict[str, int] = {}
        self._wild: dict[tuple[str, int], list[tuple[int, tuple[str, ...]]]] = {}
        self._rest: dict[tuple[str, tuple[str, ...]], int] = {}
        self._bodies: dict[tuple[str, int], list[tuple[int, tuple[str, ...]]]] = {}
        for index, rendered in enumerate(self.templates):
            prefix, body = split_line(rendered)
            self._bodies.setdefault((prefix, len(body)), []).append((index, body))
            if body and body[-1] == REST:
                self._rest[(prefix, body[:-1])] = index
            elif WILDCARD in body:
                self._wild.setdefault((prefix, len(body)), []).append((index, body))
            else:
                self._exact[render(prefix, body)] = index

    def template_of(self, line: str) -> int | None:
        """Index of the template that explains `line`, or None (remembered: the lines of
        one application repeat from screen to screen and run to run)."""
        try:
            return self._seen[line]
        except KeyError:
            pass
        if len(self._seen) >= MAX_SEEN_LINES:
            self._forget()
        return self._remember(line)

    def _remember(self, line: str) -> int | None:
        index = self._seen[line] = self._explain(line)
        if index is None:
            self._unexplained.add(line)
        return index

    def _forget(self) -> None:
        self._seen.clear()
        self._unexplained.clear()

    def _explained(self, lines: Iterable[str]) -> tuple[int, frozenset[str]]:
        """The salient templates that no line of `lines` shows (bit i: template i), and
        the lines that no template explains. A profile of a
        :class:`trustlayer.observe.profile_set.ProfileSet` asks its set, which explains
        each observed state once for all its profiles; else set operations on the
        remembered answers leave only lines never seen before to explain one by one (the
        last answer is kept for the next question about the same lines: the tolerance
        asks again)."""
        lines = lines if isinstance(lines, frozenset) else frozenset(lines)
        if self.shared is not None:
            profiles, number = self.shared
            return profiles.explained(lines, number)
        last = self._last
        if last is not None and last[0] is lines:
            return last[1], last[2]
        new = lines.difference(self._seen)
        if new:
            if len(self._seen) + len(new) > MAX_SEEN_LINES:
                self._forget()
                new = lines
            for line in new:
                self._remember(line)
        missing = self._salient
        # (the set holds no None once it is taken out: one pass, no filter)
        for index in cast("set[int]", set(map(self._seen.__getitem__, lines)) - {None}):
            missing &= ~(1 << index)
        unexplained = lines & self._unexplained
        self._last = (lines, missing, unexplained)
        return missing, unexplained

    def _explain(self, line: str) -> int | None:
        prefix, body = split_line(line)
        index = self._exact.get(render(prefix, body))
        if index is not None:
            return index
        for index, template in self._wild.get((prefix, len(body)), ()):
            if all(t == WILDCARD or t == b for t, b in zip(template, body)):
                return index
        key = leading_key(body)
        return self._rest.get((prefix, key)) if key else None

    def compare(self, lines: Iterable[str]) -> tuple[list[str], list[str]]:
        """Salient templates that `lines` lack, and lines that no template explains."""
        missing, unexplained = self._explained(lines)
        return [self.templates[i] for i in bit_indices(missing)], sorted(unexplained)

    def unexplained(self, lines: Iterable[str]) -> frozenset[str]:
        """The lines of `lines` that no template explains (:meth:`compare`, unsorted)."""
        return self._explained(lines)[1]

    def lacking(self, lines: Iterable[str]) -> int:
        """How many salient templates `lines` lack (:meth:`compare`, not listed)."""
        lines = lines if isinstance(lines, frozenset) else frozenset(lines)
        return self._explained(lines)[0].bit_count()

    def shows_every_salient(self, lines: Iterable[str]) -> bool:
        """Whether `lines` show every salient template (:meth:`compare` finds none
        missing), without listing what they lack."""
        if self.shared is not None:
            profiles, number = self.shared
            return profiles.shows_every_salient(frozenset(lines), number)
        return not self._explained(lines)[0]

    def contradictions(self, lines: Iterable[str]) -> list[str]:
        """Lines of an observation that show a salient learned line, which the observation
        lacks, with one value changed: the same tokens but one, where successful runs never
        varied (``188 rows`` in place of ``8 rows``, ``hello word`` in place of ``hello
        world``). A changed value contradicts what successful runs showed; a line of
        another shape, or beside the learned one (a second result row), does not.

        >>> p = Profile(["X|8 rows where cities > 2", "X|row 243"], [True, True])
        >>> p.contradictions(["X|188 rows where cities > 2", "X|row 243", "X|row 244"])
        ['X|188 rows where cities > 2']
        """
        missing, unexplained = self._explained(lines)
        if not missing:  # every salient line is shown: none is contradicted
            return []
        return [line for line in sorted(unexplained)
                if any(missing >> index & 1 for index in self._near_salient(line))]

    def _near_salient(self, line: str) -> tuple[int, ...]:
        """The salient templates `line` shows with one value changed (remembered)."""
        try:
            return self._near[line]
        except KeyError:
            pass
        if len(self._near) >= MAX_SEEN_LINES:
            self._near.clear()
        prefix, body = split_line(line)
        near = self._near[line] = tuple(
            index for index, template in self._bodies.get((prefix, len(body)), ())
            if self.salient[index] and sum(t != b and t not in (WILDCARD, REST)
                                           for t, b in zip(template, body)) == 1)
        return near

    @property
    def salient_templates(self) -> list[str]:
        return [t for t, s in zip(self.templates, self.salient) if s]

    def with_optional(self, templates: Iterable[str]) -> Profile:
        """This profile with `templates` (rendered) added as optional ones, those that no
        template of it explains already (a line is explained by one template: the one
        it has, which may be salient).

        >>> Profile(["X|<*> a"], [True]).with_optional(["X|<*> b", "X|x a"]).templates
        ['X|<*> a', 'X|<*> b']
        """
        extra = [t for t in dict.fromkeys(templates) if self.template_of(t) is None]
        return Profile(self.templates + extra, self.salient + [False] * len(extra))

    def to_json(self) -> dict:
        return {"templates": self.templates, "salient": self.salient}

    @classmethod
    def from_json(cls, data: dict) -> Profile:
        return cls(list(data["templates"]), list(data["salient"]))
