"""Dominators on hand-made graphs, and the networkx start-node guard."""
import networkx as nx
import pytest

from trustlayer.learn.dominators import (
    START,
    SUCCESS,
    essential_chain,
    immediate_dominators,
    merged_graph,
    unroll_visits,
)


def test_loading_screen_optional_search_dialog_essential():
    graph = merged_graph([
        ["loading", "home", "search dialog", "search results"],
        ["home", "search dialog", "search results"],
        ["home", "toast", "search dialog", "search results"],
    ])
    assert essential_chain(graph) == ["home", "search dialog", "search results"]


def test_alternative_routes_are_optional_and_convergence_is_essential():
    graph = merged_graph([["home", "menu", "editor"], ["home", "palette", "editor"],
                          ["home", "launcher", "editor", "saved"]])
    assert essential_chain(graph) == ["home", "editor"]


def test_retries_cycles_keep_the_milestones():
    graph = merged_graph([["home", "dialog", "error", "dialog", "done"],
                          ["home", "dialog", "done"]])
    assert essential_chain(graph) == ["home", "dialog", "done"]


def test_start_node_is_never_in_the_result_whatever_the_networkx_version():
    graph = nx.DiGraph([(START, "a"), ("a", SUCCESS)])
    idom = immediate_dominators(graph)
    assert START not in idom and idom == {"a": START, SUCCESS: "a"}
    with pytest.raises(KeyError):
        immediate_dominators(graph, "nowhere")


def test_unreachable_sink_is_an_error():
    graph = nx.DiGraph([(START, "a")])
    graph.add_node(SUCCESS)
    with pytest.raises(ValueError, match="not reachable"):
        essential_chain(graph)


def test_revisits_do_not_open_shortcuts():
    runs = [["toast", "home", "done", "toast"], ["home", "done"]]
    assert essential_chain(merged_graph(unroll_visits(r) for r in runs)) == ["home", "done"]
    assert essential_chain(merged_graph(runs)) == []  # why unrolling is needed
