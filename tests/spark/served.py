"""A served job's home for the fault tests: a filled spool, the reference's result set,
and the exactly-once check (tests/spark/test_spark_kill.py; the chaos harness, benchmarks/chaos).

The spool holds the rss example's 6 documents and shifted copies of them with new
ids (30 documents): nearly every micro-batch has results.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pyarrow.parquet as pq

from tests.spark.killing import Job, JobPaths
from xscl.connectors.document import Document, envelope_line, read_envelope_file
from xscl.connectors.spool import Spool
from xscl.reference import run_batch as reference_run_batch
from xscl.spark_plugin.results_sink import STAGING, committed_markers, read_results, visible_markers

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


class Fixture:
    """A home with a filled spool, the reference result set and the job's paths."""

    def __init__(self, root: Path, per_batch: int, first: int | None = None) -> None:
        """``first``: only the first so many documents are in the spool at the start
        (a multiple of ``per_batch``); ``append_rest`` adds the others."""
        self.root = root
        self.per_batch = per_batch
        self.docs = example_documents()
        source = root / "docs.jsonl"
        source.write_text("".join(envelope_line(d) + "\n" for d in self.docs), encoding="utf-8")
        reference = root / "reference.jsonl"
        reference_run_batch(QUERIES.read_text(encoding="utf-8"), source, reference)
        self.expected = {
            record["result_id"]: record
            for record in map(json.loads, reference.read_text(encoding="utf-8").splitlines())
        }
        assert len(self.expected) > 2 * COPIES, "the example should give many results"
        self.paths = JobPaths(root / "home")
        self.spooled = len(self.docs) if first is None else first
        with Spool(self.paths.home / "spool", sync=False) as writer:
            writer.append(self.docs[: self.spooled])
        self.batches = -(-len(self.docs) // per_batch)
        self.log = root / "jobs.log"

    def append_rest(self) -> None:
        """Append the documents not spooled yet, in one spool commit."""
        with Spool(self.paths.home / "spool", sync=False) as writer:
            writer.append(self.docs[self.spooled :])
        self.spooled = len(self.docs)

    def options(self, *extra: str) -> list[str]:
        """The job's command-line options (``python -m xscl.spark_plugin.submit ...``)."""
        return [
            "--queries", str(QUERIES), "--spool", str(self.paths.home / "spool"),
            "--home", str(self.paths.home), "--max-records-per-batch", str(self.per_batch), *extra,
        ]

    def start(self, *extra: str, log: str | None = None) -> Job:
        """Start the job in its own process group (``log``: its own log file's name)."""
        argv = [sys.executable, "-m", "xscl.spark_plugin.submit", *self.options(*extra)]
        return Job(argv, self.log if log is None else self.root / log, self.root)

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
        assert self.committed() == self.batches, f"{story}\n{self.committed()} markers"
        leftovers = sorted(
            str(p.relative_to(self.paths.results))
            for p in self.paths.results.glob(f"*/{STAGING}/*")
        )
        assert not leftovers, f"{story}\norphaned staging files: {leftovers}"


def result_ids_of_parts(results: Path) -> list[str]:
    """Every result_id in every committed part file (no deduplication)."""
    ids: list[str] = []
    for folder, marker in visible_markers(results):
        for part in marker["parts"]:
            file = folder / part["file"]
            if file.suffix == ".parquet":
                ids.extend(pq.read_table(file, columns=["result_id"])["result_id"].to_pylist())
                continue
            text = file.read_text(encoding="utf-8")
            ids.extend(json.loads(line)["result_id"] for line in text.splitlines() if line)
    return ids
