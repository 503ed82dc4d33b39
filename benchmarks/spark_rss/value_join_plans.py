"""Measure the two candidate physical plans for the value-join step (step 2; docs/benchmarks.md).

Input: synthetic witness rows ``(value STRING, var INT, doc STRING, ts TIMESTAMP)``
written as one Parquet file per micro-batch (file source, ``maxFilesPerTrigger=1``,
``availableNow``), timestamps increasing batch after batch so nothing is late.
The step computes, per micro-batch, every new pair of witnesses with the same string
value, different documents and ``|ts1 - ts2| <= window`` (each unordered pair once):
what the thesis's view cache R_L,s feeds to the per-template joins.

* plan ``a``: Spark's stream-stream inner join of the witness stream with itself on
  ``value`` with watermarks and a time-range condition (JVM, RocksDB state evicted by
  watermark), then ``foreachBatch`` (where template assembly would run);
* plan ``b``: ``transformWithStateInPandas`` keyed by ``value``, one ``ListState`` of
  ``(var, doc, ts)`` per value (the R_L slice), joining new rows against the slice in
  Python, evicting rows the watermark has passed by more than the window when the
  key is touched (time mode ``EventTime``; a processing-time TTL is the wrong clock
  for event-time windows, and ``ProcessingTime`` mode makes ``availableNow`` run
  empty batches forever), then the same ``foreachBatch``.

Both plans must produce the same number of pairs as a brute-force count (checked).
Per-batch latency is Spark's ``triggerExecution`` time from the progress events.

    python benchmarks/spark_rss/value_join_plans.py --rows 10000 100000 --batches 5
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

BASE_MICROS = 1_149_156_000_000_000  # 2006-06-01T10:00:00Z
WINDOW_S = 3600
#: Event time covered by one micro-batch (so a window spans a few batches).
BATCH_SPAN_S = 1800


def generate(rows: int, batches: int, seed: int = 7) -> list[list[tuple[str, int, str, int]]]:
    """Witness rows per batch: ~4 witnesses per value, 3 witnesses per document."""
    rng = random.Random(seed)
    values = max(1, rows // 4)
    per_batch = rows // batches
    out = []
    index = 0
    for batch in range(batches):
        rows_of_batch = []
        for _ in range(per_batch):
            ts = BASE_MICROS + (batch * BATCH_SPAN_S + rng.randrange(BATCH_SPAN_S)) * 1_000_000
            value = f"value {rng.randrange(values)}"
            rows_of_batch.append((value, rng.randrange(8), f"d{index // 3}", ts))
            index += 1
        out.append(rows_of_batch)
    return out


def brute_force_pairs(batches: list[list[tuple[str, int, str, int]]]) -> int:
    """The expected pair count (same value, different docs, within the window)."""
    by_value: dict[str, list[tuple[str, int]]] = defaultdict(list)
    for batch in batches:
        for value, _var, doc, ts in batch:
            by_value[value].append((doc, ts))
    window = WINDOW_S * 1_000_000
    count = 0
    for items in by_value.values():
        for i in range(len(items)):
            for j in range(i + 1, len(items)):
                if items[i][0] != items[j][0] and abs(items[i][1] - items[j][1]) <= window:
                    count += 1
    return count


def write_batches(folder: Path, batches: list[list[tuple[str, int, str, int]]]) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    folder.mkdir(parents=True)
    for number, batch in enumerate(batches):
        table = pa.table(
            {
                "value": [r[0] for r in batch],
                "var": pa.array([r[1] for r in batch], pa.int32()),
                "doc": [r[2] for r in batch],
                "ts": pa.array([r[3] for r in batch], pa.timestamp("us", tz="UTC")),
            }
        )
        path = folder / f"batch-{number:05d}.parquet"
        pq.write_table(table, path)
        stamp = time.time() - 1000 + number  # file source orders by modification time
        os.utime(path, (stamp, stamp))


WITNESS_DDL = "value STRING, var INT, doc STRING, ts TIMESTAMP"
PAIR_COLUMNS = ["value", "var1", "doc1", "ts1", "var2", "doc2", "ts2"]
PAIR_DDL_LONG = "value STRING, var1 INT, doc1 STRING, ts1 LONG, var2 INT, doc2 STRING, ts2 LONG"


def witnesses(spark: Any, folder: Path) -> Any:
    return (
        spark.readStream.schema(WITNESS_DDL)
        .option("maxFilesPerTrigger", 1)
        .parquet(str(folder))
        .withWatermark("ts", "10 minutes")
    )


def plan_a(spark: Any, folder: Path) -> Any:
    """Stream-stream self-join on the string value with a time range (JVM state)."""
    from pyspark.sql import functions as F

    left = witnesses(spark, folder).alias("l")
    right = witnesses(spark, folder).alias("r")
    # Only equality + time range in the join: Spark derives the state eviction bound
    # from it (a ``l.doc < r.doc`` there, even as a later filter the optimizer pushes
    # into the join, makes that analysis fail), so distinct documents are required
    # in the assembly step (``foreachBatch``), where template assembly runs anyway.
    condition = F.expr(
        f"l.value = r.value AND "
        f"l.ts BETWEEN r.ts - INTERVAL {WINDOW_S} SECONDS AND r.ts + INTERVAL {WINDOW_S} SECONDS"
    )
    return left.join(right, condition, "inner").select(
        F.col("l.value").alias("value"),
        F.col("l.var").alias("var1"), F.col("l.doc").alias("doc1"), F.col("l.ts").alias("ts1"),
        F.col("r.var").alias("var2"), F.col("r.doc").alias("doc2"), F.col("r.ts").alias("ts2"),
    )


def plan_b(spark: Any, folder: Path) -> Any:
    """transformWithStateInPandas keyed by value holding the R_L slice in a ListState."""
    from pyspark.sql.streaming.stateful_processor import StatefulProcessor

    window = WINDOW_S * 1_000_000

    class SliceJoin(StatefulProcessor):
        def init(self, handle: Any) -> None:
            self.slice = handle.getListState("slice", "var INT, doc STRING, ts LONG")

        def handleInputRows(self, key: Any, rows: Iterator[Any], timerValues: Any) -> Iterator[Any]:
            import pandas as pd  # type: ignore[import-untyped]

            value = key[0]
            stored = list(self.slice.get()) if self.slice.exists() else []
            # Evict by event time: rows no window can reach once the watermark passed them.
            horizon = timerValues.getCurrentWatermarkInMs() * 1000 - window
            kept = [row for row in stored if row[2] >= horizon]
            earlier = list(kept)
            new = pd.concat(list(rows), ignore_index=True).sort_values("ts_us", kind="stable")
            fresh = [
                (int(v), str(d), int(t))
                for v, d, t in new[["var", "doc", "ts_us"]].itertuples(index=False, name=None)
            ]
            out = []
            for var, doc, ts in fresh:
                for var0, doc0, ts0 in earlier:
                    if doc0 != doc and abs(ts - ts0) <= window:
                        a, b = sorted([(var0, doc0, ts0), (var, doc, ts)], key=lambda r: r[1])
                        out.append((value, *a, *b))
                earlier.append((var, doc, ts))
            if len(kept) < len(stored):
                self.slice.put(kept + fresh)  # put() rejects an empty list
            else:
                self.slice.appendList(fresh)
            if out:
                yield pd.DataFrame(out, columns=PAIR_COLUMNS)

        def close(self) -> None:
            pass

    return (
        witnesses(spark, folder)
        .selectExpr("value", "var", "doc", "unix_micros(ts) AS ts_us")
        .groupBy("value")
        .transformWithStateInPandas(SliceJoin(), PAIR_DDL_LONG, "append", "EventTime")
    )


def run_plan(spark: Any, plan: str, folder: Path, checkpoint: Path) -> dict[str, Any]:
    from xscl.spark_plugin.progress import ProgressPrinter

    frame = plan_a(spark, folder) if plan == "a" else plan_b(spark, folder)
    pairs: dict[int, int] = {}

    def assemble(batch: Any, batch_id: int) -> None:
        pairs[batch_id] = batch.where("doc1 < doc2").count()

    printer = ProgressPrinter(None)
    spark.streams.addListener(printer)
    started = time.perf_counter()
    query = (
        frame.writeStream.foreachBatch(assemble)
        .option("checkpointLocation", str(checkpoint))
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination()
    wall = time.perf_counter() - started
    if query.exception() is not None:
        raise RuntimeError(str(query.exception()))
    printer.wait_for(len(pairs), timeout=30)
    spark.streams.removeListener(printer)
    batches = [b for b in printer.batches if b.documents]
    return {
        "latencies_ms": [b.duration_ms for b in batches],
        "rows": sum(b.documents for b in batches),
        "pairs": sum(pairs.values()),
        "state_rows": batches[-1].state_rows if batches else 0,
        "wall_s": wall,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--batches", type=int, default=5)
    parser.add_argument("--plans", default="ab", help="which plans: a, b or ab")
    parser.add_argument("--master", default="local[2]")
    args = parser.parse_args(argv)
    from xscl.spark_plugin.session import build_session

    work = Path(tempfile.mkdtemp(prefix="xscl-vj-"))
    spark = build_session(args.master, "xscl-value-join-bench", home=work / "home")
    header = f"{'plan':<5}{'rows':>8}{'batches':>8}{'pairs':>10}{'first ms':>10}{'p50 ms':>9}" \
             f"{'max ms':>9}{'rows/s':>9}{'state':>9}"
    print(header)
    for rows in args.rows:
        data = generate(rows, args.batches)
        expected = brute_force_pairs(data)
        folder = work / f"in-{rows}"
        write_batches(folder, data)
        for plan in args.plans:
            result = run_plan(spark, plan, folder, work / f"ck-{plan}-{rows}")
            lat = result["latencies_ms"]
            result["rows"] = sum(len(b) for b in data)  # plan a reads the source twice
            # rows/s over the steady batches (the first one pays plan and worker start-up)
            steady = lat[1:] or lat
            steady_rows = result["rows"] * len(steady) / max(1, len(lat))
            rate = steady_rows / (sum(steady) / 1000) if sum(steady) else 0.0
            ok = "" if result["pairs"] == expected else f"  MISMATCH (expected {expected})"
            print(
                f"{plan:<5}{result['rows']:>8}{len(lat):>8}{result['pairs']:>10}{lat[0]:>10}"
                f"{int(statistics.median(steady)):>9}{max(lat):>9}{rate:>9.0f}"
                f"{result['state_rows']:>9}{ok}",
                flush=True,
            )
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
