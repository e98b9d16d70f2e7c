"""Learned line templates: which parts of a state vary between successful runs, which must match.

The members of one model state are corresponding states of different successful runs.
Lines that differ between members in a few word positions, and never stand together in
one member, are variants of one slot: they become one template with a wildcard ``*`` at
the differing positions (``untitled.txt`` / ``hello.txt`` -> ``<*> . txt``). A template
found in every member is *salient* (it must match); one found in some members is
*optional*. Anything a new state shows that no template explains is *unexplained*.
Nothing here knows about any particular application: the variation is learned.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from typing import Iterable, Sequence

from trustlayer.observe.canonical import content_lines, tokens

WILDCARD = "<*>"  # one token: a literal "*" in a line stays a literal
REST = "<**>"  # stands for the whole value after a "key:" that successful runs varied
MAX_VARYING_SHARE = 0.34
MAX_KEY_TOKENS = 4
MAX_SEEN_LINES = 1 << 14  # remembered answers per profile


@lru_cache(maxsize=1 << 16)
def _split(line: str) -> tuple[str, tuple[str, ...]]:
    prefix, _, body = line.partition("|")
    return prefix, tokens(body)


def _render(prefix: str, template: tuple[str, ...]) -> str:
    return f"{prefix}|{' '.join(template)}"


def is_exact(template: str) -> bool:
    """True when a rendered template has no wildcard: it matches one line form only."""
    return WILDCARD not in template and REST not in template


@lru_cache(maxsize=1 << 16)
def template_form(line: str) -> str:
    """A canonical line as an exact template renders it (tokens joined by spaces)."""
    return _render(*_split(line))


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


@lru_cache(maxsize=1 << 16)
def shape_of(line: str) -> str:
    """A canonical line or template with its numbers as wildcards and a run of one mark
    as one mark (a progress bar): what a tool's report looks like whatever it counted.

    >>> shape_of("X|45 passed , 5 skipped in <dur>"), shape_of("X|. . . . [ 35 % ]")
    ('X|<*> passed , <*> skipped in <dur>', 'X|. [ <*> % ]')
    """
    prefix, body = _split(line)
    shaped: list[str] = []
    for token in body:
        token = WILDCARD if token.isdigit() else token
        if not (shaped and token == shaped[-1] and not token[:1].isalnum()
                and token != WILDCARD):
            shaped.append(token)
    return _render(prefix, tuple(shaped))


def _key(body: tuple[str, ...]) -> tuple[str, ...] | None:
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
    prefix, body = _split(line)
    key = _key(body)
    return _render(prefix, key) if key else line


def _can_merge(left: tuple[str, ...], right: tuple[str, ...]) -> bool:
    if len(left) != len(right):
        return False
    differing = [i for i, (a, b) in enumerate(zip(left, right)) if a != b]
    if not differing or len(differing) > int(len(left) * MAX_VARYING_SHARE):
        return False
    return all((left[i] == WILDCARD or left[i][:1].isalnum()) and right[i][:1].isalnum()
               for i in differing)


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
        self._salient = [i for i, salient in enumerate(self.salient) if salient]
        self._exact: dict[str, int] = {}
        self._wild: dict[tuple[str, int], list[tuple[int, tuple[str, ...]]]] = {}
        self._rest: dict[tuple[str, tuple[str, ...]], int] = {}
        self._bodies: dict[tuple[str, int], list[tuple[int, tuple[str, ...]]]] = {}
        for index, rendered in enumerate(self.templates):
            prefix, body = _split(rendered)
            self._bodies.setdefault((prefix, len(body)), []).append((index, body))
            if body and body[-1] == REST:
                self._rest[(prefix, body[:-1])] = index
            elif WILDCARD in body:
                self._wild.setdefault((prefix, len(body)), []).append((index, body))
            else:
                self._exact[_render(prefix, body)] = index

    def template_of(self, line: str) -> int | None:
        """Index of the template that explains `line`, or None (remembered: the lines of
        one application repeat from screen to screen and run to run)."""
        try:
            return self._seen[line]
        except KeyError:
            pass
        if len(self._seen) >= MAX_SEEN_LINES:
            self._seen.clear()
        index = self._seen[line] = self._explain(line)
        return index

    def _explain(self, line: str) -> int | None:
        prefix, body = _split(line)
        index = self._exact.get(_render(prefix, body))
        if index is not None:
            return index
        for index, template in self._wild.get((prefix, len(body)), ()):
            if all(t == WILDCARD or t == b for t, b in zip(template, body)):
                return index
        key = _key(body)
        return self._rest.get((prefix, key)) if key else None

    def compare(self, lines: Iterable[str]) -> tuple[list[str], list[str]]:
        """Salient templates that `lines` lack, and lines that no template explains."""
        found: set[int] = set()
        unexplained = []
        for line in lines:
            index = self.template_of(line)
            if index is None:
                unexplained.append(line)
            else:
                found.add(index)
        missing = [self.templates[i] for i in self._salient if i not in found]
        return missing, sorted(unexplained)

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
        lines = list(lines)
        shown = {self.template_of(line) for line in lines}
        found = []
        for line in lines:
            if self.template_of(line) is not None:
                continue
            prefix, body = _split(line)
            for index, template in self._bodies.get((prefix, len(body)), ()):
                if self.salient[index] and index not in shown and sum(t != b and t not in (WILDCARD, REST)
                                              for t, b in zip(template, body)) == 1:
                    found.append(line)
                    break
        return found

    @property
    def salient_templates(self) -> list[str]:
        return [t for t, s in zip(self.templates, self.salient) if s]

    def with_optional(self, templates: Iterable[str]) -> "Profile":
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
    def from_json(cls, data: dict) -> "Profile":
        return cls(list(data["templates"]), list(data["salient"]))


def _merge_by_key(lines: list[str], split: dict, group_of: dict[str, int],
                  bodies: dict[int, tuple[str, ...]], owners: dict[int, set[int]]) -> None:
    """Second pass: lines still apart that start with the same ``key:`` and never stand
    together in one member hold varied values of one field (a hotel's name, a price):
    their template keeps the key and takes any value."""
    by_key: dict[tuple[str, tuple[str, ...]], list[int]] = {}
    for line in lines:
        group = group_of[line]
        key = _key(bodies[group]) if group in bodies and REST not in bodies[group] else None
        if key and group not in by_key.get((split[line][0], key), []):
            by_key.setdefault((split[line][0], key), []).append(group)
    for (_, key), groups in sorted(by_key.items()):
        first = groups[0]
        merged = False
        for other in groups[1:]:
            if other in bodies and first in bodies and not owners[first] & owners[other] \
                    and bodies[first] != bodies[other]:
                owners[first] |= owners.pop(other)
                del bodies[other]
                for line, group in group_of.items():
                    if group == other:
                        group_of[line] = first
                merged = True
        if merged:
            bodies[first] = key + (REST,)


def learn_profile(members: Sequence[frozenset[str]],
                  optional: Sequence[frozenset[str]] | None = None) -> Profile:
    """Learn the templates of one model state from its members' canonical lines.

    `optional` holds, per member, lines that are no evidence of the state: how the agent
    worked (:func:`trustlayer.learn.evidence.habit_lines`) or what it left alone
    (:func:`trustlayer.learn.evidence.untouched_facts`); a template that any member shows
    as such a line is optional, not salient.

    Two lines are variants of one slot when they have the same prefix and token count,
    differ in at most a third of their positions (words only), and never occur together
    in one member (two lines of one screen are two slots). The most alike variants are
    merged first, so a slot filled in every member is found before a loose look-alike.

    >>> p = learn_profile([frozenset({"T|untitled.txt - Lab", "X|saved"}),
    ...                    frozenset({"T|hello.txt - Lab", "X|saved"})])
    >>> p.compare({"T|greeting.txt - Lab", "X|saved"})
    ([], [])
    >>> p.compare({"T|greeting.md - Lab", "X|saved"})
    (['T|<*> . txt - Lab'], ['T|greeting.md - Lab'])
    """
    holders: dict[str, set[int]] = {}
    for number, member in enumerate(members):
        for line in member:
            holders.setdefault(line, set()).add(number)
    lines = sorted(holders)
    split = {line: _split(line) for line in lines}
    buckets: dict[tuple[str, int], list[str]] = {}
    for line in lines:
        buckets.setdefault((split[line][0], len(split[line][1])), []).append(line)
    pairs = []
    for bucket in buckets.values():
        for i, left in enumerate(bucket):
            for right in bucket[i + 1:]:
                if not holders[left] & holders[right] and _can_merge(split[left][1],
                                                                     split[right][1]):
                    distance = sum(a != b for a, b in zip(split[left][1], split[right][1]))
                    pairs.append((distance, left, right))
    group_of = {line: i for i, line in enumerate(lines)}
    bodies = {i: split[line][1] for i, line in enumerate(lines)}
    owners = {i: set(holders[line]) for i, line in enumerate(lines)}
    for _, left, right in sorted(pairs):
        a, b = group_of[left], group_of[right]
        if a == b or owners[a] & owners[b] or not _can_merge(bodies[a], bodies[b]) \
                and bodies[a] != bodies[b]:
            continue
        bodies[a] = tuple(x if x == y else WILDCARD for x, y in zip(bodies[a], bodies[b]))
        owners[a] |= owners.pop(b)
        del bodies[b]
        for line, group in group_of.items():
            if group == b:
                group_of[line] = a
    _merge_by_key(lines, split, group_of, bodies, owners)
    prefixes = {group_of[line]: split[line][0] for line in lines}
    groups = sorted(bodies)
    templates = [_render(prefixes[g], bodies[g]) for g in groups]
    optional = optional or [frozenset()] * len(members)
    not_evidence = {group_of[line] for line in lines
                    if any(line in optional[m] for m in holders[line])}
    salient = [len(owners[g]) == len(members) and g not in not_evidence for g in groups]
    return Profile(templates, salient)


def varied_words(profile: Profile, members: Sequence[frozenset[str]]) -> set[str]:
    """The words (letters, three or more) members showed in the wildcard slots of
    `profile`: what successful runs chose differently (``report``, ``notes``).

    >>> p = learn_profile([frozenset({"X|saved report.txt"}), frozenset({"X|saved notes.txt"})])
    >>> sorted(varied_words(p, [frozenset({"X|saved report.txt"})]))
    ['report']
    """
    varied: set[str] = set()
    for lines in members:
        for line in lines:
            index = profile.template_of(line)
            if index is None:
                continue
            template, body = _split(profile.templates[index])[1], _split(line)[1]
            if WILDCARD in template and len(template) == len(body):
                varied.update(b for t, b in zip(template, body)
                              if t == WILDCARD and len(b) >= 3 and b.isalpha())
    return varied


def borrow_variation(profile: Profile, varied: set[str]) -> Profile:
    """`profile` of a state seen in one run only, with the words that varied between runs
    elsewhere (:func:`varied_words`) as wildcards: one member cannot show what varies.

    >>> borrow_variation(Profile(["X|panel for report . txt"], [True]), {"report"}).templates
    ['X|panel for <*> . txt']
    """
    templates: list[str] = []
    salient: list[bool] = []
    for rendered, is_salient in zip(profile.templates, profile.salient):
        prefix, body = _split(rendered)
        rendered = _render(prefix, tuple(WILDCARD if t in varied else t for t in body))
        if rendered in templates:
            salient[templates.index(rendered)] |= is_salient
        else:
            templates.append(rendered)
            salient.append(is_salient)
    return Profile(templates, salient)


def learned_tolerance(members: Sequence[frozenset[str]]) -> float:
    """How much a new member of a state may show that the others never did, learned by
    leaving each member out: the largest share of its content lines that the templates
    of the other members do not explain (0.0 with fewer than two members).

    >>> learned_tolerance([frozenset({"X|a", "X|b"}), frozenset({"X|a", "X|b", "X|toast"})])
    0.3333
    """
    if len(members) < 2:
        return 0.0
    shares = []
    for left_out, member in enumerate(members):
        others = learn_profile([m for i, m in enumerate(members) if i != left_out])
        _, unexplained = others.compare(member)
        shares.append(min(1.0, len(unexplained) / max(1, len(content_lines(member)))))
    return round(max(shares), 4)
