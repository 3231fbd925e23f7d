"""ContextDAG: seq, parents, predecessors, ordinals, find, graph, dict round trip."""

from __future__ import annotations

import contextlib
import threading

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from PIL import Image as PILImage

from openprogram import ContextDAG, Node, Session, agentic_function
from openprogram.core.image import ImageRef


@agentic_function
def leaf(i):
    return i


@agentic_function
def branch(n):
    return [leaf(i) for i in range(n)]


def recorded(program) -> ContextDAG:
    with Session() as session:
        program()
    return session.dag


def test_seq_is_strictly_increasing_and_the_only_order():
    dag = recorded(lambda: [branch(2), branch(1)])
    seqs = [n.seq for n in dag.nodes]
    assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs)


def test_parents_predecessors_children_and_ordinals():
    dag = recorded(lambda: [branch(2), branch(1)])
    first, second = dag.children(None)
    assert (first.predecessor, second.predecessor) == (None, first.id)
    assert [c.input for c in dag.children(first.id)] == [{"i": 0}, {"i": 1}]
    assert [dag.ordinal(n) for n in dag.find(name="leaf")] == [1, 2, 3]
    assert dag.ordinal(second.id) == 2
    assert all(n.parent == second.id for n in dag.children(second.id))


def test_find_filters_by_name_and_kind():
    dag = recorded(lambda: branch(2))
    assert [n.name for n in dag.find(kind="code")] == ["branch", "leaf", "leaf"]
    assert dag.find(name="nothing") == []


def test_graph_has_calls_and_follows_edges():
    dag = recorded(lambda: [branch(1), branch(1)])
    graph = dag.graph
    first, second = dag.children(None)
    (inner,) = dag.children(first.id)
    assert graph.edges[first.id, inner.id]["kind"] == "calls"
    assert graph.edges[first.id, second.id]["kind"] == "follows"
    assert graph.number_of_nodes() == len(dag)
    leaf(9)  # recorded into the default session, not this DAG: the graph is unchanged
    assert dag.graph.number_of_nodes() == len(dag)


def test_to_dict_from_dict_round_trips_nodes_and_images():
    @agentic_function
    def look(picture):
        return {"seen": picture}

    dag = recorded(lambda: look(PILImage.new("RGB", (3, 2), "green")))
    data = dag.to_dict()
    copy = ContextDAG.from_dict(data)
    assert [n.model_dump() for n in copy.nodes] == [n.model_dump() for n in dag.nodes]
    ref = copy.nodes[0].output["seen"]
    assert isinstance(ref, ImageRef) and copy.image(ref).size == (3, 2)
    assert [copy.ordinal(n) for n in copy.nodes] == [1]


def test_concurrent_recording_keeps_seq_unique():
    with Session() as session:
        threads = [threading.Thread(target=branch, args=(20,)) for _ in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    dag = session.dag
    assert len(dag) == 8 * 21
    assert len({n.seq for n in dag.nodes}) == len(dag)
    for top in dag.children(None):
        assert len(dag.children(top.id)) == 20


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 20), min_size=1, max_size=60))
@pytest.mark.slow
def test_dag_invariants(parents):
    dag = ContextDAG()
    made: list[Node] = []
    for pick in parents:
        parent = made[pick % len(made)].id if made and pick % 4 else None
        made.append(dag.add("code", f"f{pick % 3}", parent=parent))
    for node in dag.nodes:
        if node.parent is not None:
            assert dag.node(node.parent).seq < node.seq
            assert node in dag.children(node.parent)
        if node.predecessor is not None:
            predecessor = dag.node(node.predecessor)
            assert predecessor.parent is None and predecessor.seq < node.seq
        assert dag.last_seq(node) >= node.seq
    tops = dag.children(None)
    assert [t.predecessor for t in tops] == [None] + [t.id for t in tops[:-1]]


def test_print_dag_gives_the_call_tree_of_a_session_in_memory():
    from openprogram import Runtime, ScriptedModel, Session, agentic_function, llm

    @agentic_function(expose="hidden")
    def secret() -> str:
        return "s"

    @agentic_function
    def broken() -> None:
        raise ValueError("the disk\nis full")

    @agentic_function
    def write(product: str) -> str:
        secret()
        with contextlib.suppress(ValueError):
            broken()
        return llm(f"Tagline for {product}")

    with Session() as session, Runtime(ScriptedModel(["Smart coffee."])):
        write("coffee")
    dag = session.dag

    text = str(dag)

    lines = text.splitlines()
    assert lines[0] == "ContextDAG (4 nodes)"
    assert lines[1].startswith("✓  write #1  ")
    assert lines[2].startswith("  ✓  secret #1  [hidden]  ")
    assert lines[3].startswith("  ✗  broken #1  ") and lines[3].endswith(
        "ValueError: the disk is full"
    )
    assert lines[4].startswith("  ✓  write #1 (llm)  ") and " tok $0.0000" in lines[4]
    assert dag.tree(depth=1).splitlines() == [lines[1]]
    assert dag.tree(limit=2).splitlines()[-1] == "… 2 more nodes"
    assert repr(dag) == "<ContextDAG: 4 nodes>"
    assert str(ContextDAG()) == "ContextDAG (empty)"


def test_a_node_repr_is_one_short_line_whatever_it_holds():
    from openprogram import Session, agentic_function

    @agentic_function
    def big(text: str) -> str:
        return text

    with Session() as session:
        big("x" * 100_000)
    (node,) = session.dag.nodes

    assert repr(node) == (
        f"Node(id={node.id!r}, seq={node.seq}, kind='code', name='big', status='completed')"
    )


@pytest.mark.slow
def test_a_node_knows_the_dag_that_holds_it_and_a_copy_knows_none():
    import copy
    import gc
    import pickle

    from openprogram.core.dag import dag_of

    dag = recorded(lambda: branch(2))
    node = dag.find(name="leaf")[1]
    assert dag_of(node) is dag
    loaded = ContextDAG.from_dict(dag.to_dict())
    assert dag_of(loaded.node(node.id)) is loaded
    forked = Session()
    for each in dag.nodes:
        forked.dag.restore(each.model_copy())
    assert dag_of(forked.dag.node(node.id)) is forked.dag
    for twin in (node.model_copy(), copy.deepcopy(node), pickle.loads(pickle.dumps(node))):
        assert twin == node and dag_of(twin) is None  # equal, but in no DAG
    del dag, loaded
    gc.collect()
    assert dag_of(node) is None  # the reference is weak: the node keeps no DAG alive
