"""The executor half of the job without Spark: the source's tasks and ``JoinGroups`` by hand.

Each micro-batch's spool records go through the job's source (``RoutedStreamReader.read``:
Stage 1, lateness, routing), the routed rows are grouped by key and handed to ``JoinGroups`` with an
in-memory stand-in for Spark's ``GroupState`` — what ``applyInPandasWithState`` does,
minus Spark. What the groups publish is appended to the published spool after each
batch, as the sink's commit does, and read by the next one, until none is new. This
makes the join groups cheap enough to check against the reference on many generated
workloads, batch cuts and lateness settings (Hypothesis), and to pin rules such as
eviction by hand.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given
from hypothesis import strategies as st

from tests.profiles import examples
from tests.rules import RULES, Rule, check_rule
from tests.spark.jobkit import reference_by_id
from tests.workloads import Workload, workloads
from xscl.connectors.document import Document
from xscl.connectors.spool import Spool
from xscl.results.atom import FeedEntry, entry_of, result_entry_id
from xscl.results.feed_rows import entry_reference
from xscl.results.group_parts import GroupParts
from xscl.results.read import part_records
from xscl.service.subscriptions import SubscriptionLog
from xscl.spark_plugin.compile_job import compile_in_process
from xscl.spark_plugin.job import hot_values
from xscl.spark_plugin.job.join_groups import JoinGroups
from xscl.spark_plugin.job.placement import group_keys
from xscl.spark_plugin.job.routed_source import ROUTED_SCHEMA, RoutedStreamReader, RouteTask
from xscl.spark_plugin.job.sink import append_published
from xscl.spark_plugin.spool_source import SpoolOptions, committed_end


class MemoryState:
    """What the group function uses of Spark's ``GroupState``."""

    def __init__(self) -> None:
        self.row: tuple[Any, ...] | None = None

    @property
    def exists(self) -> bool:
        return self.row is not None

    @property
    def get(self) -> tuple[Any, ...]:
        assert self.row is not None
        return self.row

    def update(self, row: tuple[Any, ...]) -> None:
        self.row = row

    def remove(self) -> None:
        self.row = None


def run_job(
    work: Path,
    text: str,
    docs: Sequence[Document],
    cuts: list[int],
    lateness: int | None,
    compiled: bool = False,
    part_format: str = "jsonl",
    feed_entries: int = 2,
    hot_threshold: int | None = None,
) -> tuple[dict[str, dict[str, Any]], list[dict[str, Any]]]:
    """Results (by id, read from the parts the groups staged) and dead letters of the
    executor functions over ``docs``; with ``compiled``, the workers register the
    queries from the compiled table. Each group's feed entries are checked
    (``check_entries``). With ``hot_threshold``, the groups report hot values and each
    batch's are recorded before the next, as the driver's commit does, spread over 4
    salts."""
    registry = work / "registry"
    log = SubscriptionLog(registry)
    log.subscribe(text, source="workload.xscl")
    log.record_applied(1, 0)
    if compiled:
        assert compile_in_process(registry, 1)
    with Spool(work / "spool", sync=False) as spool:
        spool.append(docs)
        end = spool.next_offset()
    parts = GroupParts(str(work / "results"), part_format, feed_entries)
    hot_folder = str(work / "hot") if hot_threshold is not None else None
    route = RouteTask(
        str(registry), group_keys(8, 3), 1 if hot_folder is None else 4, lateness,
        str(work / "results"), part_format, feed_entries, hot_folder=hot_folder,
    )  # fmt: skip
    published = str(work / "published")
    options = SpoolOptions.parse({"path": str(work / "spool"), "registry": str(registry)})
    source = RoutedStreamReader(options, route, published)
    groups = JoinGroups(
        str(registry), str(work / "spool"), lateness, parts, hot_threshold, published=published
    )
    states: dict[int, MemoryState] = {}
    results: dict[str, dict[str, Any]] = {}
    dead: list[dict[str, Any]] = []
    bounds = sorted({0, end, *(c for c in cuts if 0 < c < end)})
    spans = list(itertools.pairwise(bounds))
    read = 0  # published records read so far
    while spans or committed_end(published) > read:
        # one micro-batch, planned as the source plans it: the next input span (none
        # once they are all read) and every record the last batches published
        start, stop = spans.pop(0) if spans else (end, end)
        ends = {"offset": stop, "published": committed_end(published)}
        ranges = source.partitions({"offset": start, "published": read}, ends)
        read = ends["published"]
        batches = [b for r in ranges for b in source.read(r)]
        routed = pa.Table.from_batches(batches, schema=ROUTED_SCHEMA).to_pandas()
        to_publish: list[Document] = []
        hot: list[str] = []
        for key, rows in routed.groupby("group", sort=True):
            state = states.setdefault(int(key), MemoryState())
            entries: list[tuple[str, str, int, bytes]] = []
            for out in groups((int(key),), iter([rows.reset_index(drop=True)]), state):
                for kind, query, result_id, end_ts, line in zip(
                    out["kind"],
                    out["query"],
                    out["result_id"],
                    out["end"],
                    out["line"],
                    strict=True,
                ):
                    if kind == "part":
                        for record in part_records(Path(json.loads(line)["file"])):
                            assert record["result_id"] not in results, "a result found twice"
                            results[record["result_id"]] = record
                    elif kind == "entry-at":
                        entries.append((query, result_id, int(end_ts), line))
                    elif kind == "dead":
                        dead.append(json.loads(line))
                    elif kind == "publish":
                        to_publish.append(Document(query, result_id, int(end_ts), line.decode()))
                    elif kind == "hot":
                        hot.append(line.decode())
            check_entries(entries, results, feed_entries)
        if hot_folder is not None:
            hot_values.record(hot_folder, f"batch-{read}-{start}", hot)
        if to_publish:
            append_published(published, to_publish)
    return results, dead


def check_entries(
    entries: list[tuple[str, str, int, bytes]], results: dict[str, Any], limit: int
) -> None:
    """A group's ``entry-at`` rows point at the Atom entries of its newest results,
    byte for byte what the sink renders from the result's line (``atom.entry_of``), at
    most ``limit`` per query (``group_parts.keep_newest`` chooses which)."""
    by_query: dict[str, list[str]] = {}
    for query, result_id, end, line in entries:
        file, at, size = entry_reference(line)
        with open(file, "rb") as handle:
            handle.seek(at)
            data = handle.read(size)
        record = results[result_id]
        assert record["query"] == query
        assert FeedEntry(end, result_entry_id(result_id), data) == entry_of(record, end)
        by_query.setdefault(query, []).append(result_id)
    for query, kept in by_query.items():
        assert len(kept) <= limit, query


def _item(docid: str, seconds: int, value: str) -> Document:
    return Document("S", docid, seconds * 1_000_000, f"<item><a>{value}</a></item>")


def test_an_early_document_of_a_batch_still_joins_what_a_later_one_evicts(
    tmp_path: Path,
) -> None:
    """Eviction by the batch's smallest horizon first: B (t=5) joins A (t=0) within 10 s,
    although C (t=100) in the same batch makes A unreachable for every later document."""
    text = "Q: S//item->i[./a->x] JOIN {x = y, 10s} S//item->j[./a->y];\n"
    docs = [_item("A", 0, "v"), _item("B", 5, "v"), _item("C", 100, "v"), _item("D", 101, "v")]
    got, dead = run_job(tmp_path, text, docs, cuts=[1], lateness=0)
    expected = reference_by_id(tmp_path, text, docs, 0)
    pairs = {tuple(d["docid"] for d in r["docs"]) for r in expected.values()}
    assert pairs == {("A", "B"), ("B", "A"), ("C", "D"), ("D", "C")}
    assert got == expected
    assert dead == []


@pytest.mark.parametrize("rule", RULES, ids=repr)
def test_the_join_groups_follow_the_rule(tmp_path: Path, rule: Rule) -> None:
    """The join rules pinned by hand (``tests/rules.py``), one document per micro-batch."""
    got, dead = run_job(tmp_path, rule.queries, rule.docs, list(range(len(rule.docs))), None)
    check_rule(rule, got.values())
    assert dead == []


@examples(80, suppress=[HealthCheck.function_scoped_fixture])
@given(
    workload=workloads(documents=(1, 16)),
    cuts=st.lists(st.integers(1, 17), max_size=5),
    lateness=st.sampled_from([None, 0, 1_000_000, 2_500_000]),
    compiled=st.booleans(),
)
def test_the_join_groups_agree_with_the_reference(
    tmp_path_factory: Any,
    workload: Workload,
    cuts: list[int],
    lateness: int | None,
    compiled: bool,
) -> None:
    work = tmp_path_factory.mktemp("groups")
    got, _dead = run_job(work, workload.text, workload.docs, cuts, lateness, compiled)
    assert got == reference_by_id(work, workload.text, list(workload.docs), lateness)


def test_a_heavy_batch_leaves_a_group_in_bounded_frames(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A group's results go to its staged part, and only small rows leave it: the part
    row and each query's newest ``--feed-entries`` entries as references, in frames of
    at most ``OUTPUT_CHUNK`` rows (a heavy batch's rows never sit whole in the
    worker's frames), in either results format."""
    from xscl.spark_plugin.job import join_groups as groups

    monkeypatch.setattr(groups, "OUTPUT_CHUNK", 7)
    sizes: list[int] = []
    real_frame = groups._frame

    def counted(rows: list[tuple[str, str, str, int, bytes]]) -> Any:
        sizes.append(len(rows))
        return real_frame(rows)

    monkeypatch.setattr(groups, "_frame", counted)
    text = "Q: S//item->i[./a->x] JOIN {x = y, INF} S//item->j[./a->y];\n"
    docs = [_item(f"d{i}", i, "v") for i in range(12)]  # 12 * 11 ordered pairs
    expected = reference_by_id(tmp_path, text, docs, None)
    assert len(expected) == 132
    for part_format in ("jsonl", "parquet"):
        got, _dead = run_job(tmp_path / part_format, text, docs, [], None, part_format)
        assert got == expected
        # one query: its newest 2 entry rows, the part row, the time row
        assert sizes == [2 + 2]
        sizes.clear()
        work = tmp_path / f"{part_format}-all"
        got, _dead = run_job(work, text, docs, [], None, part_format, feed_entries=200)
        assert got == expected
        assert max(sizes) <= 7 + 1  # a last frame may add the time row
        assert sum(sizes) == 132 + 2  # every result's entry, the part row, the time row
        sizes.clear()
