"""Sharing groups on Spark (``xscl.spark_plugin.sharing``): the DataFrame components equal
the union-find oracle, converge in few rounds on a long path, and ``xscl explain
--sharing --home`` groups a registry's live queries as the oracle does.

GraphFrames' jar cannot be had on these machines (no Maven access): its path is tested by faking the
jar's presence at the detection seam and standing in for the ``graphframes`` module.
"""

from __future__ import annotations

import json
import math
import sys
import types
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pyspark.sql import DataFrame, SparkSession

from tests.profiles import examples
from xscl.cli.main import main
from xscl.lang.normal_form import normalize
from xscl.service.compiled.table import CompiledQuery
from xscl.service.sharing.keys import groups, sharing_groups
from xscl.service.sharing.summary import in_process
from xscl.service.subscriptions import SubscriptionLog
from xscl.spark_plugin.sharing import components
from xscl.spark_plugin.sharing.graphframes_cc import GraphFramesComponents
from xscl.spark_plugin.sharing.star import DataFrameComponents
from xscl.templates import assign_template


def _edges(spark: SparkSession, pairs: list[tuple[int, int]]) -> DataFrame:
    return spark.createDataFrame(pairs, "src LONG, dst LONG")


def _partition(labels: DataFrame, vertices: set[int]) -> set[frozenset[int]]:
    """The groups of ``vertices`` by their labels."""
    by_label: dict[int, set[int]] = {}
    for row in labels.collect():
        if row["id"] in vertices:
            by_label.setdefault(row["component"], set()).add(row["id"])
    return {frozenset(group) for group in by_label.values()}


# queries are even vertex ids, keys odd, as in ``sharing.registry``
bipartite = st.lists(
    st.tuples(st.integers(0, 14).map(lambda q: 2 * q), st.integers(0, 7).map(lambda k: 2 * k + 1)),
    min_size=1,
    max_size=24,
)


@examples(5)
@given(pairs=bipartite)
def test_dataframe_components_equal_union_find(
    spark: SparkSession, pairs: list[tuple[int, int]]
) -> None:
    found = DataFrameComponents().label(_edges(spark, pairs))
    queries = {q for q, _ in pairs}
    assert _partition(found.labels, queries) == {frozenset(g) for g in groups(pairs)}
    # every vertex is labelled once, with the smallest id of its component
    rows = found.labels.collect()
    assert len(rows) == len({v for pair in pairs for v in pair})
    members: dict[int, list[int]] = {}
    for row in rows:
        members.setdefault(row["component"], []).append(row["id"])
    assert all(label == min(ids) for label, ids in members.items())


def test_a_long_path_converges_in_few_rounds(spark: SparkSession) -> None:
    # the smallest id at one end: plain min-label propagation would take 199 rounds
    n = 200
    found = DataFrameComponents().label(_edges(spark, [(i, i + 1) for i in range(n - 1)]))
    assert {row["component"] for row in found.labels.collect()} == {0}
    assert found.labels.count() == n
    assert found.rounds is not None and found.rounds <= 2 * math.ceil(math.log2(n))


def test_graphframes_is_chosen_only_when_its_jar_loads(
    spark: SparkSession, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    # the real seam: this JVM has no GraphFrames jar, and asking prints nothing
    assert components.graphframes_loadable(spark) is False
    assert "Traceback" not in capfd.readouterr().err
    assert isinstance(components.components_for(spark), DataFrameComponents)
    monkeypatch.setattr(components, "graphframes_loadable", lambda _spark: True)
    assert isinstance(components.components_for(spark), GraphFramesComponents)


def test_graphframes_components_hand_graphframes_ids_and_edges(
    spark: SparkSession, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A stand-in ``graphframes`` module checks what GraphFrames would be given and
    answers as it does (a ``component`` column beside the vertex columns)."""
    seen: dict[str, Any] = {}

    class GraphFrame:
        def __init__(self, vertices: DataFrame, edges: DataFrame) -> None:
            seen["columns"] = (vertices.columns, edges.columns)
            self.vertices, self.edges = vertices, edges

        def connectedComponents(self, **options: Any) -> DataFrame:
            seen["options"] = options
            pairs = [(r["src"], r["dst"]) for r in self.edges.collect()]
            labels = [(v, min(g)) for g in groups(pairs + [(d, d) for _, d in pairs]) for v in g]
            return spark.createDataFrame(labels, "id LONG, component LONG")

    monkeypatch.setitem(sys.modules, "graphframes", types.SimpleNamespace(GraphFrame=GraphFrame))
    pairs = [(2, 1), (4, 1), (6, 3), (8, 5), (6, 5)]
    found = GraphFramesComponents().label(_edges(spark, pairs))
    assert seen["columns"] == (["id"], ["src", "dst"])
    assert seen["options"] == {"use_local_checkpoints": True}
    assert found.rounds is None
    assert _partition(found.labels, {2, 4, 6, 8}) == {frozenset({2, 4}), frozenset({6, 8})}


FIRST = """\
a1: A//x->p JOIN {p=q, 1h} B//y->q;
a2: A//x->p FOLLOWED BY {p=q, 1h} C//z->q;
b1: D//x->p[./k->r] JOIN {p=q AND r=s, 1h} E//y->q[./k->s];
c1: F//x->p[./k->r] FOLLOWED BY {p=q AND r=s, INF} G//y->q[./k->s] PUBLISH P;
c2: P//x->p FOLLOWED BY {p=q AND p=r, INF} H//y->q[./v->r];
d1: I//a->p FOLLOWED BY {p=q, 1h} J//b->q FOLLOWED BY {q=r, 1h} K//c->r;
"""


def test_explain_sharing_of_a_registry_equals_the_oracle(
    spark: SparkSession, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    home = tmp_path / "home"
    files = {
        "first.xscl": FIRST,
        # e1 shares b1's template; f1 shares only the template of d1, which goes
        "more.xscl": (
            "e1: M//x->p[./k->r] JOIN {p=q AND r=s, 2h} N//y->q[./k->s];\n"
            "f1: Q//a->p FOLLOWED BY {p=q, 1h} R//b->q FOLLOWED BY {q=r, 1h} S//c->r;\n"
        ),
        "again.xscl": "d1: A//x->p JOIN {p=q, 2h} L//w->q;\n",  # a new d1, in a1's group
    }
    for name, text in files.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    job = ["--home", str(home)]
    assert main(["subscribe", str(tmp_path / "first.xscl"), *job]) == 0
    assert main(["subscribe", str(tmp_path / "more.xscl"), *job]) == 0
    assert main(["unsubscribe", "d1", *job]) == 0
    assert main(["subscribe", str(tmp_path / "again.xscl"), *job]) == 0
    capsys.readouterr()

    assert main(["explain", "--sharing", *job, "--top", "50", "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)

    live = SubscriptionLog(home / "registry" / "xscl").current()
    compiled = [CompiledQuery(n, assign_template(n)) for n in map(normalize, live.values())]
    expected = json.loads(json.dumps(in_process(compiled, 50).to_json()))
    oracle = {frozenset(g) for g in sharing_groups(compiled)}
    assert oracle == {
        frozenset(g) for g in (["a1", "a2", "d1"], ["b1", "e1"], ["c1", "c2"], ["f1"])
    }
    assert {frozenset(g["qids"]) for g in summary["largest"]} == oracle
    for field in ("queries", "templates", "definitions", "published_streams", "groups",
                  "singletons", "largest", "not_compiled"):  # fmt: skip
        assert summary[field] == expected[field], field
    assert summary["implementation"] == DataFrameComponents.name
    assert summary["rounds"] >= 1

    assert main(["unsubscribe", *sorted(live), *job]) == 0
    capsys.readouterr()
    assert main(["explain", "--sharing", *job]) == 2
    err = capsys.readouterr().err
    assert "XSCL-S016" in err and "Traceback" not in err
