"""Exports: networkx, GraphML, Mermaid, DOT and JSON carry every node and edge."""

from __future__ import annotations

import io
import re

import networkx as nx
import pytest

from openprogram import ContextDAG
from openprogram.display import (
    to_dot,
    to_graphml,
    to_json,
    to_mermaid,
    to_networkx,
    write_export,
)
from openprogram.errors import UsageError


def edge_kinds(graph) -> dict[str, int]:
    kinds: dict[str, int] = {}
    for _, _, data in graph.edges(data=True):
        kinds[data["kind"]] = kinds.get(data["kind"], 0) + 1
    return kinds


def test_networkx_copy_has_plain_attributes_and_the_dag_edges(tagline_session):
    dag = tagline_session.dag

    graph = to_networkx(dag)

    assert set(graph.nodes) == {n.id for n in dag.nodes}
    assert edge_kinds(graph) == edge_kinds(dag.graph)
    for _, data in graph.nodes(data=True):
        assert all(isinstance(v, (str, int, float, bool)) for v in data.values())
    review = dag.find(name="review", kind="llm")[0]
    assert graph.nodes[review.id]["label"] == "review #1"
    assert graph.nodes[review.id]["input_tokens"] == review.usage.input_tokens


def test_networkx_copy_can_add_what_each_llm_call_read(tagline_session):
    dag = tagline_session.dag

    graph = to_networkx(dag, reads=True)

    for node in dag.find(kind="llm"):
        readers = {
            s for s, _, d in graph.in_edges(node.id, data=True) if d["kind"] in ("reads", "calls")
        }
        assert set(node.reads) <= readers | {node.parent}


def test_graphml_reads_back_with_the_same_nodes_edges_and_attributes(tagline_session):
    dag = tagline_session.dag

    graph = nx.read_graphml(io.StringIO(to_graphml(dag)))

    assert set(graph.nodes) == {n.id for n in dag.nodes}
    assert graph.number_of_edges() == dag.graph.number_of_edges()
    first = dag.nodes[1]
    assert graph.nodes[first.id]["name"] == first.name
    assert graph.nodes[first.id]["seq"] == first.seq


def test_mermaid_has_a_box_per_node_and_an_arrow_per_edge(tagline_session):
    dag = tagline_session.dag

    text = to_mermaid(dag, values=True)

    assert text.startswith("flowchart TD\n")
    boxes = re.findall(r"^  n(\d+)[\[(]", text, re.M)
    assert sorted(map(int, boxes)) == [n.seq for n in dag.nodes]
    assert text.count(" --> ") == sum(1 for n in dag.nodes if n.parent)
    assert text.count(" -.-> ") == sum(1 for n in dag.nodes if n.predecessor)


def test_mermaid_and_dot_escape_quotes_and_markup():
    dag = ContextDAG()
    node = dag.add("code", "quote", input={})
    dag.complete(node, None, status="error", error='say "hi" <b>#1</b> \\ done')

    mermaid = to_mermaid(dag, values=True)
    dot = to_dot(dag, values=True)

    label = re.search(r'n1\["(.*)"\]', mermaid).group(1)
    assert '"' not in label and "<b>" not in label and "#34;" in label
    assert '\\"hi\\"' in dot and "\\\\ done" in dot


def test_dot_is_one_digraph_with_a_statement_per_node_and_edge(tagline_session):
    dag = tagline_session.dag

    text = to_dot(dag)

    assert text.startswith("digraph context_dag {") and text.rstrip().endswith("}")
    assert text.count(" [label=") == len(dag)
    assert text.count(" -> ") == dag.graph.number_of_edges()
    assert text.count("[style=dashed]") == sum(1 for n in dag.nodes if n.predecessor)


def test_json_export_loads_back_into_an_equal_dag(tagline_session):
    dag = tagline_session.dag

    loaded = ContextDAG.from_dict(__import__("json").loads(to_json(dag)))

    assert [(n.id, n.name, n.status, n.reads) for n in loaded.nodes] == [
        (n.id, n.name, n.status, n.reads) for n in dag.nodes
    ]
    assert set(loaded.blobs) == set(dag.blobs)


@pytest.mark.parametrize(
    ("name", "start"),
    [("run.graphml", "<?xml"), ("run.mmd", "flowchart"), ("run.dot", "digraph"), ("run.json", "{")],
)
def test_write_export_picks_the_format_from_the_suffix(tagline_session, tmp_path, name, start):
    written = write_export(tagline_session.dag, tmp_path / name)

    assert written == tmp_path / name
    assert written.read_text(encoding="utf-8").startswith(start)
    assert [p.name for p in tmp_path.iterdir()] == [name]


def test_write_export_says_how_to_choose_a_format(tagline_session, tmp_path):
    with pytest.raises(UsageError, match=r"\.graphml, \.mmd, \.dot or \.json"):
        write_export(tagline_session.dag, tmp_path / "run.txt")
    written = write_export(tagline_session.dag, tmp_path / "run.txt", format="dot")
    assert written.read_text().startswith("digraph")
