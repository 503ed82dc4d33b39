"""Atom feed flush: feed files written one after another vs by a few threads.

    python benchmarks/atom_feeds/run.py                      # 1 / 2 / 4 / 8 threads
    python benchmarks/atom_feeds/run.py --queries 200 --repeat 5

The streaming job rewrites every feed that got results at the end of each
micro-batch (``AtomFeedWriter.flush``: render, write, ``fsync``, rename). At
100k subscriptions that was 23% of the driver's first batch, its fsync'd writes
15% (docs/benchmarks.md). This replays the same kind of load without Spark or
the engine: ``--queries`` feeds, each getting ``--per-batch`` new results per
flush for ``--batches`` flushes (so feeds fill up to their 200 entries), every
result a ``SELECT *`` result whose XML is two documents' pieces of about
``--piece-kb`` KB each, drawn from a pool of documents as the engine shares
them. Each thread count writes into a fresh folder, in alternating order, and
the table shows the median over ``--repeat`` rounds of the total flush time,
and the bytes the flushes wrote. Files are fsync'd, so the disk is measured,
not the page cache.
"""

from __future__ import annotations

import argparse
import random
import shutil
import statistics
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from xscl.connectors.document import format_ts
from xscl.results.atom import AtomFeedWriter

DOCUMENTS = 400


def documents(piece_kb: int, seed: int) -> list[tuple[str, str]]:
    """(docid, element text) of ``DOCUMENTS`` documents of about ``piece_kb`` KB."""
    rng = random.Random(seed)
    words = ["feed", "item", "atom", "stream", "query", "value", "join", "window"]
    docs = []
    for n in range(DOCUMENTS):
        body = " ".join(rng.choice(words) for _ in range(piece_kb * 1024 // 6))
        docs.append(
            (f"https://example.org/post/{n}", f"<item><title>{n}</title><p>{body}</p></item>")
        )
    return docs


def batches(args: argparse.Namespace) -> list[list[dict[str, Any]]]:
    """The result records of every flush, the same for each thread count."""
    rng = random.Random(args.seed)
    docs = documents(args.piece_kb, args.seed)
    out = []
    serial = 0
    for batch in range(args.batches):
        records = []
        for query in range(args.queries):
            for _ in range(args.per_batch):
                serial += 1
                first, second = rng.sample(docs, 2)
                ts = format_ts((batch * 1_000_000 + serial) * 1_000_000)
                records.append(
                    {
                        "query": f"q{query:05d}",
                        "result_id": f"{serial:032x}",
                        "docs": [
                            {"stream": "feed", "docid": first[0], "ts": ts},
                            {"stream": "feed", "docid": second[0], "ts": ts},
                        ],
                        "xml_parts": ("<result>", first[1], second[1], "</result>"),
                    }
                )
        out.append(records)
    return out


def measure(threads: int, flushes: list[list[dict[str, Any]]], folder: Path) -> tuple[float, int]:
    """Seconds spent in ``flush`` over all batches, and the bytes of the feeds written."""
    writer = AtomFeedWriter(folder, io_threads=threads)
    seconds = 0.0
    written = 0
    for records in flushes:
        for record in records:
            writer.add(record)
        start = time.perf_counter()
        writer.flush()
        seconds += time.perf_counter() - start
        written += sum(path.stat().st_size for path in folder.glob("*.atom"))
    return seconds, written


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2, 4, 8])
    parser.add_argument("--queries", type=int, default=500, help="feeds (queries with results)")
    parser.add_argument("--per-batch", type=int, default=70, help="new results per feed per flush")
    parser.add_argument("--batches", type=int, default=4, help="flushes")
    parser.add_argument("--piece-kb", type=int, default=8, help="size of a document's element")
    parser.add_argument("--repeat", type=int, default=3, help="rounds (median)")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--work", type=Path, help="folder for the feeds (default: a temporary one)")
    args = parser.parse_args(argv)
    flushes = batches(args)
    work = Path(tempfile.mkdtemp(prefix="xscl-atom-", dir=args.work))
    seconds: dict[int, list[float]] = {t: [] for t in args.threads}
    written = 0
    try:
        for round_ in range(args.repeat):  # alternate the order: the machine is shared
            order = args.threads if round_ % 2 == 0 else list(reversed(args.threads))
            for threads in order:
                folder = work / f"{threads}-{round_}"
                took, written = measure(threads, flushes, folder)
                seconds[threads].append(took)
                shutil.rmtree(folder)
                print(f"  round {round_ + 1}, {threads} thread(s): {took:.2f} s", flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    baseline = statistics.median(seconds[args.threads[0]])
    print(
        f"{args.queries} feeds, {args.batches} flushes of {args.per_batch} results per feed, "
        f"{written / 2**20:,.0f} MiB of feed files written per run"
    )
    versus = f"vs {args.threads[0]}"
    print(f"{'threads':>7} | {'flush s (median)':>16} | {'MB/s':>6} | {versus:>6}")
    for threads in args.threads:
        median = statistics.median(seconds[threads])
        print(
            f"{threads:>7} | {median:>16.2f} | {written / median / 1e6:>6.0f} | "
            f"{baseline / median:>5.2f}x"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
