"""Learning a model state's line templates from its members (see
:mod:`trustlayer.observe.templates`): lines that differ between members in a few word
positions, and never stand together in one member, are variants of one slot and become
one template with wildcards there; a template every member shows is salient.
"""
from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from functools import lru_cache

from trustlayer.observe.canonical import content_lines
from trustlayer.observe.templates import (
    REST,
    WILDCARD,
    Profile,
    leading_key,
    render,
    says_something,
    split_line,
)

MAX_VARYING_SHARE = 0.34
SHOWN_PREFIXES = ("X|", "A|")  # what a screen shows: its text and accessibility tree


def _can_merge(left: tuple[str, ...], right: tuple[str, ...]) -> bool:
    if len(left) != len(right):
        return False
    differing = [i for i, (a, b) in enumerate(zip(left, right)) if a != b]
    if not differing or len(differing) > int(len(left) * MAX_VARYING_SHARE):
        return False
    return all((left[i] == WILDCARD or left[i][:1].isalnum()) and right[i][:1].isalnum()
               for i in differing)


def _absorb(other: int, into: int, group_of: dict[str, int],
            bodies: dict[int, tuple[str, ...]], owners: dict[int, set[int]]) -> None:
    """Group `other` becomes part of group `into`: its members and its lines (the caller
    sets the merged body)."""
    owners[into] |= owners.pop(other)
    del bodies[other]
    for line, group in group_of.items():
        if group == other:
            group_of[line] = into


def _merge_by_key(lines: list[str], split: dict, group_of: dict[str, int],
                  bodies: dict[int, tuple[str, ...]], owners: dict[int, set[int]]) -> None:
    """Second pass: lines still apart that start with the same ``key:`` and never stand
    together in one member hold varied values of one field (a hotel's name, a price):
    their template keeps the key and takes any value."""
    by_key: dict[tuple[str, tuple[str, ...]], list[int]] = {}
    for line in lines:
        group = group_of[line]
        key = leading_key(bodies[group]) if group in bodies and REST not in bodies[group] else None
        if key and group not in by_key.get((split[line][0], key), []):
            by_key.setdefault((split[line][0], key), []).append(group)
    for (_, key), groups in sorted(by_key.items()):
        first = groups[0]
        merged = False
        for other in groups[1:]:
            if other in bodies and first in bodies and not owners[first] & owners[other] \
                    and bodies[first] != bodies[other]:
                _absorb(other, first, group_of, bodies, owners)
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
    A line of punctuation only is never salient
    (:func:`~trustlayer.observe.templates.says_something`).

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
    split = {line: split_line(line) for line in lines}
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
        _absorb(b, a, group_of, bodies, owners)
    _merge_by_key(lines, split, group_of, bodies, owners)
    prefixes = {group_of[line]: split[line][0] for line in lines}
    groups = sorted(bodies)
    templates = [render(prefixes[g], bodies[g]) for g in groups]
    optional = optional or [frozenset()] * len(members)
    not_evidence = {group_of[line] for line in lines
                    if any(line in optional[m] for m in holders[line])}
    salient = [len(owners[g]) == len(members) and g not in not_evidence
               and says_something(render(prefixes[g], bodies[g])) for g in groups]
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
            template, body = split_line(profile.templates[index])[1], split_line(line)[1]
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
        prefix, body = split_line(rendered)
        rendered = render(prefix, tuple(WILDCARD if t in varied else t for t in body))
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
    # Every line the other members show is explained by their templates, and templates
    # depend on which lines members show together, not on how many show them: only a
    # member with lines of its own can show what the others' templates do not explain,
    # and its others are the distinct members but it.
    shown = Counter(line for member in members for line in member)
    distinct = list(dict.fromkeys(members))
    shares = [0.0]
    for member in distinct:
        if all(shown[line] > 1 for line in member):
            continue
        others = learn_profile([m for m in distinct if m is not member])
        _, unexplained = others.compare(member)
        shares.append(min(1.0, len(unexplained) / max(1, len(content_lines(member)))))
    return round(max(shares), 4)


def chrome_lines(runs: Sequence[Sequence[frozenset[str]]]) -> frozenset[str]:
    """The lines of text or of the accessibility tree that every state of every successful
    run shows (`runs`: per run, its states' content lines): the application's frame (a
    theme switch, a user menu), which tells no state from another. Files are no frame (a
    file every state shows may still be removed). None from one run: it cannot tell frame
    from task.

    >>> chrome_lines([[frozenset({"X|theme: auto", "X|List"}), frozenset({"X|theme: auto"})],
    ...               [frozenset({"X|theme: auto", "X|Form"})]])
    frozenset({'X|theme: auto'})
    """
    states = [lines for run in runs for lines in run]
    if len(runs) < 2 or not states:
        return frozenset()
    return frozenset(line for line in frozenset.intersection(*states)
                     if line.startswith(SHOWN_PREFIXES))


FRAME_SHARE = 0.5  # of a run's states: a panel open most of the run is its layout
# the states an aria snapshot gives an element after its role and name
ELEMENT_STATES = re.compile(r"(?: \[[^\]\[]*\])+$")


def frame_lines(runs: Sequence[Sequence[frozenset[str]]],
                before_work: Sequence[frozenset[str]]) -> frozenset[str]:
    """Lines of text or of the accessibility tree that every successful run showed before
    its work (`before_work`: per run, the lines of its steps before the first that lasted)
    and in at least half of its states (`runs`: per run, its states' content lines): the
    layout the runs found and kept (a panel, a listing of the files there, a tab left
    open), a habit they share, not what tells one state from another. Never salient;
    what the runs brought about (typed text, a new file listed) is not there before the
    work. An element found before the work is layout also when it has lost one of its
    states since (a tab no longer selected once the runs opened another: the product of
    the work is the other tab; a state gained, a box checked, may be the task). None
    from one run.

    >>> runs = [[frozenset({"A|tab Launcher", "X|start"}), frozenset({"A|tab Launcher", "X|a"}),
    ...          frozenset({"X|b"})],
    ...         [frozenset({"A|tab Launcher", "X|start"}), frozenset({"A|tab Launcher"})]]
    >>> sorted(frame_lines(runs, [run[0] for run in runs]))
    ['A|tab Launcher']
    >>> runs = [[frozenset({'A|- tab "Home" [selected]', 'A|- checkbox "Save"'}),
    ...          frozenset({'A|- tab "Home"'}),
    ...          frozenset({'A|- tab "Home"', 'A|- checkbox "Save" [checked]'})],
    ...         [frozenset({'A|- tab "Home" [selected]', 'A|- checkbox "Save"'}),
    ...          frozenset({'A|- tab "Home"', 'A|- checkbox "Save" [checked]'})]]
    >>> sorted(frame_lines(runs, [run[0] for run in runs]))
    ['A|- checkbox "Save"', 'A|- tab "Home"', 'A|- tab "Home" [selected]']
    """
    if len(runs) < 2 or not all(runs):
        return frozenset()
    found = frozenset.intersection(*before_work)
    states = {element_of(line): states_of(line) for line in found}
    released = frozenset(line for run in runs for lines in run for line in lines
                         if states_of(line) < states.get(element_of(line), frozenset()))
    for run in runs:
        shown = [frozenset(map(element_of, lines)) for lines in run]
        found = frozenset(line for line in found | released
                          if sum(element_of(line) in elements for elements in shown)
                          >= FRAME_SHARE * len(run))
    return frozenset(line for line in found if line.startswith(SHOWN_PREFIXES))


@lru_cache(maxsize=1 << 16)  # every line of every state of every run: most lines repeat
def element_of(line: str) -> str:
    """An accessibility line without its states (``[selected]``, ``[level=2]``)."""
    return ELEMENT_STATES.sub("", line)


@lru_cache(maxsize=1 << 16)
def states_of(line: str) -> frozenset[str]:
    """The states an accessibility line gives its element."""
    found = ELEMENT_STATES.search(line)
    return frozenset(found.group(0).split(" [")[1:]) if found else frozenset()


def layout_lines(runs: Sequence[Sequence[frozenset[str]]]) -> frozenset[str]:
    """Lines of text or of the accessibility tree that at least half the states of every
    run of `runs` (other tasks of the application; per run, its states' content lines)
    show: the application's layout (its panels, tabs and status bar), no task's milestone.

    >>> run = [frozenset({"A|tab Launcher", "X|a"}), frozenset({"A|tab Launcher"}),
    ...        frozenset({"A|tab Launcher", "X|b"})]
    >>> sorted(layout_lines([run]))
    ['A|tab Launcher']
    """
    found: frozenset[str] | None = None
    for run in filter(None, runs):
        counts = Counter(line for lines in run for line in lines)
        common = frozenset(line for line, n in counts.items() if n >= FRAME_SHARE * len(run))
        found = common if found is None else found & common
    return frozenset(line for line in found or () if line.startswith(SHOWN_PREFIXES))


def chrome_variants(chrome: frozenset[str]) -> list[str]:
    """Templates of the frame showing another value: each chrome line with one of its
    words a wildcard (another theme, another mode in a status bar).

    >>> chrome_variants(frozenset({"X|theme: auto"}))
    ['X|<*> : auto', 'X|theme : <*>']
    """
    variants = []
    for line in sorted(chrome):
        prefix, body = split_line(line)
        variants += [render(prefix, body[:i] + (WILDCARD,) + body[i + 1:])
                     for i, token in enumerate(body) if token.isalpha() and len(token) >= 3]
    return variants
