"""The merged graph of successful runs and its essential states (dominators of SUCCESS).

Every successful run is a path START -> its states -> SUCCESS. A state that dominates
SUCCESS lies on every such path: it is an essential milestone. Everything else is
optional (spinners, toasts, detours, alternative routes).
"""
from __future__ import annotations

from collections.abc import Hashable, Iterable, Sequence

import networkx as nx

from trustlayer.graph_marks import START, SUCCESS, VISIT_MARK


def merged_graph(paths: Iterable[Sequence[Hashable]]) -> nx.DiGraph:
    """Union of the paths START -> states -> SUCCESS (consecutive repeats collapsed).

    >>> g = merged_graph([["a", "b"], ["a", "c", "b"]])
    >>> sorted(g.successors("a"))
    ['b', 'c']
    """
    graph: nx.DiGraph = nx.DiGraph()
    graph.add_nodes_from([START, SUCCESS])
    for path in paths:
        previous: Hashable = START
        for node in path:
            if node != previous:
                graph.add_edge(previous, node)
            previous = node
        graph.add_edge(previous, SUCCESS)
    return graph


def unroll_visits(path: Sequence[str]) -> list[str]:
    """Name the k-th visit of a state in one run ``state#k`` (the first keeps its name)
    and collapse consecutive repeats.

    A run that shows a toast at its start and again at its end must not open a path
    START -> toast -> SUCCESS that no run took; unrolled revisits keep the merged graph
    to the paths the runs really took, up to the states they share.

    >>> unroll_visits(["toast", "home", "home", "toast"])
    ['toast', 'home', 'toast#1']
    """
    visits: dict[str, int] = {}
    unrolled: list[str] = []
    previous = None
    for state in path:
        if state == previous:
            continue
        count = visits.get(state, 0)
        unrolled.append(state if count == 0 else f"{state}{VISIT_MARK}{count}")
        visits[state] = count + 1
        previous = state
    return unrolled


def convergence_points(graph: nx.DiGraph) -> list[str]:
    """States where different routes meet again: two or more predecessors (first visits).

    >>> convergence_points(merged_graph([["home", "menu", "editor"],
    ...                                  ["home", "palette", "editor"]]))
    ['editor']
    """
    return sorted(str(node) for node in graph if node not in (START, SUCCESS)
                  and VISIT_MARK not in str(node) and graph.in_degree(node) > 1)


def immediate_dominators(graph: nx.DiGraph, start: Hashable = START) -> dict[Hashable, Hashable]:
    """Immediate dominators of every node reachable from `start`, without `start`.

    networkx before 3.6 maps `start` to itself and 3.6 leaves it out; this function
    always leaves it out, so callers see one behaviour.

    Raises
    ------
    KeyError
        If `start` is not in the graph.
    """
    if start not in graph:
        raise KeyError(f"start node {start!r} is not in the graph")
    idom = dict(nx.immediate_dominators(graph, start))
    idom.pop(start, None)
    return idom


def essential_chain(graph: nx.DiGraph, start: Hashable = START,
                    sink: Hashable = SUCCESS) -> list[Hashable]:
    """The dominators of `sink`, in path order, without `start` and `sink`.

    Uses the Cooper-Harvey-Kennedy algorithm as implemented by networkx
    ("A Simple, Fast Dominance Algorithm", 2001).

    >>> g = merged_graph([["load", "home", "dialog", "results"], ["home", "dialog", "results"]])
    >>> essential_chain(g)
    ['home', 'dialog', 'results']
    """
    idom = immediate_dominators(graph, start)
    if sink not in idom:
        raise ValueError(f"{sink!r} is not reachable from {start!r}")
    chain = []
    node = idom[sink]
    while node != start:
        chain.append(node)
        node = idom[node]
    return chain[::-1]
