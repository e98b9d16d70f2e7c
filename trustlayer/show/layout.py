"""Left-to-right layout of a model's graph, shared by the HTML report and the PNG picture.

Layers by longest path from START (Sugiyama et al., "Methods for visual understanding of
hierarchical system structures", 1981, step 2): a state is drawn one column right of its
rightmost predecessor, so every forward edge points right and the milestones, which every
path passes, line up along the task. Edges that go back to an earlier state (a revisit)
are first set apart: the model's state ids follow the states' position in the runs, so an
edge to a lower id is a back edge, drawn as an arc. Within a column the essential
milestone takes the top row; the other states follow in barycentre order of their
predecessors (a few sweeps), which keeps alternative routes from crossing much.
"""
from __future__ import annotations

from collections import defaultdict
from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass, field

from trustlayer.graph_marks import START, SUCCESS

NODE_W, NODE_H = 132, 144
GAP_X, GAP_Y = 56, 34
MARGIN, TOP = 24, 56
SWEEPS = 4
BACK_ARC_DROP = 44  # the deepest a back edge's arc dips below its nodes


@dataclass
class Layout:
    """Where each node goes: ``position[node] = (x, y)`` of its top-left corner."""

    position: dict[str, tuple[int, int]]
    layer: dict[str, int]
    forward: list[tuple[str, str]]
    back: list[tuple[str, str]]
    width: int
    height: int
    negative_row_y: int | None = None
    rows: dict[int, list[str]] = field(default_factory=dict)


def _rank(node: str) -> tuple[int, int, str]:
    if node == START:
        return (0, 0, node)
    if node == SUCCESS:
        return (2, 0, node)
    digits = "".join(ch for ch in node if ch.isdigit())
    return (1, int(digits) if digits else 0, node)


def split_edges(edges: Iterable[tuple[str, str]]) -> tuple[list[tuple[str, str]],
                                                            list[tuple[str, str]]]:
    """Forward edges (to a later state in id order) and back edges (the rest).

    >>> split_edges([("START", "s0"), ("s0", "s2"), ("s2", "s1"), ("s1", "SUCCESS")])
    ([('START', 's0'), ('s0', 's2'), ('s1', 'SUCCESS')], [('s2', 's1')])
    """
    forward: list[tuple[str, str]] = []
    back: list[tuple[str, str]] = []
    for source, target in edges:
        (forward if _rank(source) < _rank(target) else back).append((source, target))
    return forward, back


def longest_path_layers(nodes: Sequence[str], forward: Sequence[tuple[str, str]]) -> dict[str, int]:
    """Column of each node: 0 for nodes without predecessors, else one more than the
    largest column of its predecessors (`forward` must be acyclic).

    >>> longest_path_layers(["START", "a", "b", "SUCCESS"],
    ...                     [("START", "a"), ("a", "b"), ("START", "b"), ("b", "SUCCESS")])
    {'START': 0, 'a': 1, 'b': 2, 'SUCCESS': 3}
    """
    predecessors: dict[str, list[str]] = defaultdict(list)
    for source, target in forward:
        predecessors[target].append(source)
    layer: dict[str, int] = {}
    for node in sorted(nodes, key=_rank):  # id order is a topological order of `forward`
        layer[node] = max((layer[p] + 1 for p in predecessors[node] if p in layer), default=0)
    if SUCCESS in layer:  # the end sits alone in the last column
        layer[SUCCESS] = max((v for k, v in layer.items() if k != SUCCESS), default=-1) + 1
    return layer


def _order_rows(columns: dict[int, list[str]], forward: Sequence[tuple[str, str]],
                pinned: set[Hashable]) -> dict[int, list[str]]:
    predecessors: dict[str, list[str]] = defaultdict(list)
    for source, target in forward:
        predecessors[target].append(source)
    rows = {c: sorted(nodes, key=lambda n: (n not in pinned, _rank(n)))
            for c, nodes in columns.items()}
    for _ in range(SWEEPS):
        slot = {node: i for nodes in rows.values() for i, node in enumerate(nodes)}
        for column in sorted(rows):
            def barycentre(node: str, slot: dict[str, int] = slot) -> float:
                seen = [slot[p] for p in predecessors[node] if p in slot]
                return sum(seen) / len(seen) if seen else slot[node]
            rows[column] = sorted(rows[column], key=lambda n: (n not in pinned, barycentre(n),
                                                               _rank(n)))
            slot.update({node: i for i, node in enumerate(rows[column])})
    return rows


def layout(states: Sequence[str], edges: Iterable[tuple[str, str]], essential: Sequence[str],
           negative: Sequence[str] = ()) -> Layout:
    """Place START, `states` and SUCCESS in columns left to right; `negative` states (not on
    any successful path) go in a row of their own below."""
    nodes = [START, *[s for s in states if s not in negative], SUCCESS]
    known = set(nodes)
    forward, back = split_edges((s, t) for s, t in edges if s in known and t in known)
    layer = longest_path_layers(nodes, forward)
    columns: dict[int, list[str]] = defaultdict(list)
    for node in nodes:
        columns[layer[node]].append(node)
    rows = _order_rows(columns, forward, set(essential) | {START, SUCCESS})
    position = {node: (MARGIN + column * (NODE_W + GAP_X), TOP + slot * (NODE_H + GAP_Y))
                for column, row in rows.items() for slot, node in enumerate(row)}
    width = MARGIN * 2 + (max(layer.values()) + 1) * (NODE_W + GAP_X) - GAP_X
    height = TOP + max(len(row) for row in rows.values()) * (NODE_H + GAP_Y)
    negative_row_y = None
    if negative:
        negative_row_y = height + BACK_ARC_DROP
        for index, node in enumerate(negative):
            position[node] = (MARGIN + index * (NODE_W + GAP_X), negative_row_y + 22)
            layer[node] = index
        height = negative_row_y + 22 + NODE_H + GAP_Y
        width = max(width, MARGIN * 2 + len(negative) * (NODE_W + GAP_X))
    return Layout(position, layer, forward, back, width, height + BACK_ARC_DROP + 10,
                  negative_row_y, rows)
