"""Result part files: JSON Lines vs Parquet (zstd levels), on the feed benchmark's results.

    python benchmarks/results_format/run.py                  # 10k subscriptions (~3 min)
    python benchmarks/results_format/run.py --subscriptions 1000 --repeat 5

The streaming job writes each micro-batch's results as one part file
(``xscl serve --results-format``). This isolates that cost from Spark and the
joins: the items and subscriptions of ``benchmarks/spark_rss --quick`` (the
small-web and youthopp feeds, generated subscriptions of thesis 6.6.1, windows
INF) go once through ``LocalEngine``, whose result records are kept; then each
format writes them in micro-batches of ``--batch`` items' results, exactly as
a writer task does (JSON lines joined into one file, or ``StagedParquet``, each
file ``fsync``-ed), into a fresh folder, in alternating order for ``--repeat``
rounds. The table shows the median write time, the bytes written, and the time
to read the records back as spec section 4 dicts (``read_results``).

``--spark`` adds the ``xscl-results`` data source (``df.write.format(
"xscl-results")``, option ``format`` jsonl / parquet) on ``local[2]``: the same
records as a cached DataFrame, written by Spark's tasks (one part file per
task), timed the same way.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "spark_rss"))

import workload  # benchmarks/spark_rss/workload.py

from xscl.cli.common import load_queries
from xscl.connectors.durable import write_synced
from xscl.engine import LocalEngine, ResultRecord
from xscl.engine.json_lines import JsonLineEncoder
from xscl.results import parquet as results_parquet
from xscl.results.commit import STAGING, StagedPart, commit_batch
from xscl.results.read import read_results

QUICK_FOLDERS = ("feeds-kagi-smallweb", "feeds-stream-youthopp")
#: leaves the subscriptions use, as ``spark_rss`` picks them
LEAVES = 8


def engine_results(work: Path, subscriptions: int, batch: int) -> list[list[ResultRecord]]:
    """The results of every micro-batch of ``batch`` items (spool order)."""
    folders = [f for f in workload.feed_folders() if f.name in QUICK_FOLDERS]
    items, _ = workload.spool_feed_items(folders, work)
    docs = workload.read_items(work / "spool")
    stats = workload.leaf_stats(docs)
    leaves = workload.selective_leaves(stats, LEAVES, items // 20)
    queries = work / "subs.xscl"
    workload.write_queries(
        queries, workload.subscriptions(subscriptions, [x.name for x in leaves], seed=subscriptions)
    )
    engine = LocalEngine(load_queries(queries).queries)
    batches = []
    for start in range(0, len(docs), batch):
        produced: list[ResultRecord] = []
        for doc in docs[start : start + batch]:
            produced.extend(engine.process_one(doc.stream, doc.docid, doc.ts_micros, doc.xml))
        batches.append(produced)
    return batches


def _xml_chars(record: ResultRecord) -> int:
    """The length of the record's XML, without joining (and caching) its pieces."""
    if record.xml_parts is not None:
        return sum(map(len, record.xml_parts))
    return len(record.xml)


class _StagedLines:
    """A batch's records as one staged JSON Lines file, as the job's writer tasks stage them
    (``job.sink``: the lines encoded by ``JsonLineEncoder``, joined, written, fsync-ed)."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.lines: list[bytes] = []
        self.encoder = JsonLineEncoder()
        self.path: Path | None = None

    def __enter__(self) -> _StagedLines:
        return self

    def write(self, record: ResultRecord) -> None:
        self.lines.append(self.encoder.encode(record))

    def __exit__(self, *exc: object) -> None:
        if self.lines:
            self.folder.mkdir(parents=True, exist_ok=True)
            self.path = self.folder / f"{uuid.uuid4().hex}.jsonl"
            write_synced(self.path, b"".join(self.lines))

    def part(self) -> StagedPart | None:
        return None if self.path is None else StagedPart(0, str(self.path), len(self.lines))


def jsonl_sink(folder: Path) -> Any:
    return _StagedLines(folder)


def parquet_sink(level: int) -> Callable[[Path], Any]:
    def make(folder: Path) -> Any:
        results_parquet.COMPRESSION_LEVEL = level
        return results_parquet.StagedParquet(folder)

    return make


def write_all(
    root: Path, make: Callable[[Path], Any], batches: Sequence[list[ResultRecord]]
) -> float:
    """Seconds to stage and commit every batch (what the driver does per micro-batch)."""
    start = time.perf_counter()
    for number, records in enumerate(batches):
        with make(root / STAGING) as staged:
            for record in records:
                staged.write(record)
        part = staged.part()
        commit_batch(str(root), f"{number:020d}", [part] if part is not None else [])
    return time.perf_counter() - start


def spark_frame(batches: Sequence[list[ResultRecord]], work: Path) -> Any:
    """The records as a cached DataFrame (spec section 4's fields, Spark's partitions).

    Loaded from Parquet files written by ``StagedParquet``, not ``createDataFrame``:
    a DataFrame built from 1.6 GB of driver-side rows overflows the JVM's heap.
    """
    from xscl.spark_plugin.session import build_session

    conf = {"spark.ui.enabled": "false", "spark.driver.memory": "4g"}
    spark = build_session("local[2]", "xscl-results-format", conf, home=work / "spark-home")
    folder = work / "frame"
    for records in batches:
        with results_parquet.StagedParquet(folder) as staged:
            for record in records:
                staged.write(record)
    frame = spark.read.parquet(str(folder)).cache()
    frame.count()
    return frame


def spark_writer(part_format: str, frame: Any) -> Callable[[Path], float]:
    def write(root: Path) -> float:
        start = time.perf_counter()
        frame.write.format("xscl-results").option("format", part_format).mode("append").save(
            str(root)
        )
        return time.perf_counter() - start

    return write


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--subscriptions", type=int, default=10_000)
    parser.add_argument("--batch", type=int, default=2000, help="items per micro-batch")
    parser.add_argument("--repeat", type=int, default=3, help="rounds (median shown)")
    parser.add_argument("--levels", type=int, nargs="+", default=[1, 3, 9], help="zstd levels")
    parser.add_argument("--work", help="work folder (default: a temp dir, removed)")
    parser.add_argument("--spark", action="store_true", help="also the xscl-results data source")
    args = parser.parse_args(argv)
    work = Path(args.work or tempfile.mkdtemp(prefix="xscl-results-format-"))
    try:
        started = time.perf_counter()
        batches = engine_results(work, args.subscriptions, args.batch)
        total = sum(len(b) for b in batches)
        xml_chars = sum(_xml_chars(r) for b in batches for r in b)
        print(
            f"{args.subscriptions:,} subscriptions: {total:,} results in {len(batches)} "
            f"micro-batches, {xml_chars / 2**20:,.0f} Mi characters of result XML "
            f"(engine {time.perf_counter() - started:.0f} s)",
            flush=True,
        )
        writers: list[tuple[str, Callable[[Path], float]]] = [
            ("jsonl", lambda root: write_all(root, jsonl_sink, batches))
        ]
        for level in args.levels:
            make = parquet_sink(level)
            writers.append(
                (f"parquet zstd-{level}", lambda root, make=make: write_all(root, make, batches))
            )
        if args.spark:
            frame = spark_frame(batches, work)
            writers += [(f"source {f}", spark_writer(f, frame)) for f in ("jsonl", "parquet")]
        times: dict[str, list[float]] = {name: [] for name, _ in writers}
        sizes: dict[str, int] = {}
        reads: dict[str, float] = {}
        for round_ in range(args.repeat):
            order = writers if round_ % 2 == 0 else list(reversed(writers))
            for name, write in order:
                root = work / "out" / name.replace(" ", "-")
                shutil.rmtree(root, ignore_errors=True)
                times[name].append(write(root))
                if round_ == 0:
                    sizes[name] = sum(p.stat().st_size for p in root.glob("part-*"))
                    start = time.perf_counter()
                    count = sum(1 for _ in read_results(root))
                    reads[name] = time.perf_counter() - start
                    assert count == total, (name, count, total)
                shutil.rmtree(root)
        base = statistics.median(times["jsonl"])
        print(f"\n{'format':>16} | {'write s (median)':>16} | {'vs jsonl':>8} | "
              f"{'MiB written':>11} | {'read back s':>11}")  # fmt: skip
        for name, _ in writers:
            median = statistics.median(times[name])
            print(
                f"{name:>16} | {median:>16.2f} | {base / median:>7.2f}x | "
                f"{sizes[name] / 2**20:>11,.1f} | {reads[name]:>11.2f}"
            )
        print(f"\nrounds {args.repeat}, files fsync'd, results counted back equal ({total:,})")
    finally:
        if not args.work:
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
