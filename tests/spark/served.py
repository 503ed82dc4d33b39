"""A served job's home for the fault tests: a filled spool, the reference's result set,
and the exactly-once check (tests/spark/test_spark_kill.py); the rss example's documents
for the chaos harness (benchmarks/chaos).

The kill tests' spool holds 30 generated documents and their queries
(``tests/workloads.py``, with 15 to 150 results). The checks read through the epochs
of the job's lease: every restart is a new epoch (``xscl.service.pair.epochs``).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pyarrow.parquet as pq

from tests.spark.killing import Job, JobPaths
from tests.spark.stage1_daemon import MARKS
from tests.workloads import HEADER, Workload, local_records, seeded_workload
from xscl.connectors.document import Document, envelope_line, read_envelope_file
from xscl.connectors.spool import Spool
from xscl.reference import run_batch as reference_run_batch
from xscl.results.channels import line_records
from xscl.results.commit import STAGING
from xscl.results.read import committed_markers, read_results, visible_markers
from xscl.service.pair.epochs import newest_planned_batch

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "rss"
QUERIES = EXAMPLE / "queries.xscl"
#: Copies of the 6 example documents (each shifted by 10 days, new ids): 30 documents.
COPIES = 5


def example_documents(copies: int = COPIES) -> list[Document]:
    """The rss example and shifted copies of it with new ids: many results, all batches."""
    example = list(read_envelope_file(EXAMPLE / "documents.jsonl"))
    docs: list[Document] = []
    ten_days = 10 * 86_400_000_000
    for copy in range(copies):
        for doc in example:
            assert isinstance(doc, Document)
            docid = doc.docid if copy == 0 else f"{doc.docid}#copy{copy}"
            docs.append(Document(doc.stream, docid, doc.ts_micros + copy * ten_days, doc.xml))
    return docs


#: A chain matched hop by hop (``groups.hop_chains``): every run kills the job while
#: some of its matches are composite events on their way through the published spool.
CHAIN = """\
chain3: S//item->i[./a->x] FOLLOWED BY {x = y, 6s} T//item->j[./a->y][./c->z]
    JOIN {z = w, INF} S//item->k[./c->w];
"""


def _with_chain(workload: Workload) -> Workload:
    return Workload(HEADER + CHAIN + workload.text.removeprefix(HEADER), workload.docs)


def _fits(workload: Workload) -> bool:
    """15 to 150 results, at least 5 of ``chain3`` and 5 of the generated queries."""
    records = local_records(_with_chain(workload).text, workload.docs, limit=150)
    chained = sum(r["query"] == "chain3" for r in records)
    return 15 <= len(records) <= 150 and chained >= 5 and len(records) - chained >= 5


def _workload(seed: int) -> tuple[int, Workload]:
    """30 generated documents whose queries, ``CHAIN``'s among them, give 15 to 150
    results (and its seed)."""
    used, workload = seeded_workload(seed, _fits, queries=(3, 5), documents=(30, 30))
    return used, _with_chain(workload)


class Fixture:
    """A home with a filled spool, the reference result set and the job's paths."""

    def __init__(self, root: Path, per_batch: int, seed: int) -> None:
        self.root = root
        self.per_batch = per_batch
        self.seed, workload = _workload(seed)
        self.queries = root / "queries.xscl"
        self.queries.write_text(workload.text, encoding="utf-8")
        source = root / "docs.jsonl"
        source.write_text("".join(envelope_line(d) + "\n" for d in workload.docs), "utf-8")
        reference = root / "reference.jsonl"
        reference_run_batch(workload.text, source, reference)
        self.expected = {
            record["result_id"]: record
            for record in map(json.loads, reference.read_text(encoding="utf-8").splitlines())
        }
        self.paths = JobPaths(root / "home")
        with Spool(self.paths.home / "spool", sync=False) as writer:
            writer.append(workload.docs)  # a re-delivery is not stored again
            records = writer.next_offset()
        self.batches = -(-records // per_batch)
        self.paths.marks.mkdir()
        self.log = root / "jobs.log"

    def options(self, *extra: str) -> list[str]:
        """The job's command-line options (``python -m xscl.spark_plugin.submit ...``)."""
        return [
            "--queries", str(self.queries), "--spool", str(self.paths.home / "spool"),
            "--home", str(self.paths.home), "--max-records-per-batch", str(self.per_batch), *extra,
        ]  # fmt: skip

    def start(self, *extra: str, stage1_marks: bool = False) -> Job:
        """Start the job in its own process group (``stage1_marks``: its Python daemon
        marks Stage 1, ``tests/spark/stage1_daemon.py``)."""
        argv = [sys.executable, "-m", "xscl.spark_plugin.submit", *self.options(*extra)]
        if not stage1_marks:
            return Job(argv, self.log, self.root)
        paths = [str(REPO), *filter(None, [os.environ.get("PYTHONPATH")])]
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(paths), **{MARKS: str(self.paths.marks)})
        env["PYSPARK_SUBMIT_ARGS"] = (
            "--conf spark.python.daemon.module=tests.spark.stage1_daemon pyspark-shell"
        )
        return Job(argv, self.log, self.root, env)

    def committed(self) -> int:
        return len(committed_markers(self.paths.results))

    def check_exactly_once(self, story: str) -> None:
        """Result set == reference, no result_id committed twice, every batch committed."""
        got = {record["result_id"]: record for record in read_results(self.paths.results)}
        missing = sorted(set(self.expected) - set(got))
        extra = sorted(set(got) - set(self.expected))
        assert not missing and not extra, f"{story}\nmissing {missing}\nunexpected {extra}"
        assert got == self.expected, f"{story}\nsame ids, different records"
        ids = result_ids_of_parts(self.paths.results)
        twice = sorted({i for i in ids if ids.count(i) > 1})
        assert not twice, f"{story}\ncommitted twice: {twice}"
        # every batch Spark planned is committed: the input's, and those that read what
        # the join groups published (the rss example's busy_author: a batch more)
        planned = 1 + max(
            (newest_planned_batch(c) for c in (self.paths.home / "checkpoints").glob("*/e*")),
            default=-1,
        )
        assert self.committed() == planned >= self.batches, (
            f"{story}\n{self.committed()} markers, {planned} batches planned"
        )
        leftovers = sorted(
            str(p.relative_to(self.paths.results))
            for p in self.paths.results.glob(f"*/{STAGING}/*")
        )
        assert not leftovers, f"{story}\norphaned staging files: {leftovers}"


def result_ids_of_parts(results: Path, key: str = "result_id") -> list[str]:
    """Every ``key`` (``id`` for CEL results) in every committed part file (no deduplication)."""
    ids: list[str] = []
    for folder, marker in visible_markers(results):
        for part in marker["parts"]:
            file = folder / part["file"]
            if file.suffix == ".parquet":
                ids.extend(pq.read_table(file, columns=[key])[key].to_pylist())
                continue
            text = file.read_text(encoding="utf-8")  # a channel line: one id per member
            ids.extend(r[key] for line in text.splitlines() if line for r in line_records(line))
    return ids
