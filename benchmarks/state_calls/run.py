"""Join state in Spark's state store: one blob per group, or one state call per value.

    python benchmarks/state_calls/run.py                      # 20,000 rows per batch
    python benchmarks/state_calls/run.py --rows 5000 --batches 5 --groups 8

Stage 2 keeps, per value group, the documents stored under each string value
(thesis 6.5, the R_L slices) and, for each new document's value, looks up what is
stored under it and stores the document. This benchmark does exactly that per
row (one value, a payload the size of a stored document's witness rows) on
``local[2]`` with the RocksDB state store, two ways, side by side in one run:

* ``blob``: ``applyInPandasWithState``, a group's state one binary value (a
  marshalled dict value -> payloads), read and written whole each micro-batch.
  This is the streaming job's join groups today (``spark_plugin/job/groups.py``).
* ``map``: ``transformWithStateInPandas`` with a ``MapState`` value -> payloads:
  ``containsKey`` / ``getValue`` / ``updateValue`` per row, each a call from the
  Python worker to the JVM's state server (the issue's plan (b)).

Each micro-batch is one ``availableNow`` run over a new Parquet file. Per batch
the table gives the wall time (query start included, the same for both), the
Python time inside the group functions (the slowest group and the sum), the
state calls made and the microseconds per call (``map``), and the rows per
second of Python time. Machines are noisy: compare the two rows of one run.
"""

from __future__ import annotations

import argparse
import marshal
import os
import shutil
import statistics
import tempfile
import time
from collections.abc import Iterator
from typing import Any

import pandas as pd

OUT_DDL = "k STRING, calls LONG, micros LONG"
IN_DDL = "k STRING, v STRING, d BINARY"


def _blob(
    key: tuple[Any, ...], frames: Iterator[pd.DataFrame], state: Any
) -> Iterator[pd.DataFrame]:
    """The join groups' pattern (executor, once per group and batch)."""
    started = time.perf_counter()
    stored: dict[str, list[bytes]] = marshal.loads(state.get[0]) if state.exists else {}
    for frame in frames:
        for value, data in zip(frame["v"].tolist(), frame["d"].tolist(), strict=True):
            stored.setdefault(value, []).append(data)
    state.update((marshal.dumps(stored),))
    micros = round((time.perf_counter() - started) * 1e6)
    yield pd.DataFrame({"k": [str(key[0])], "calls": [0], "micros": [micros]})


def _map_processor() -> Any:
    """A ``StatefulProcessor`` with one ``MapState`` value -> payloads (driver builds it)."""
    from pyspark.sql.streaming.stateful_processor import StatefulProcessor

    class PerValue(StatefulProcessor):
        def init(self, handle: Any) -> None:
            self.slices = handle.getMapState("slices", "v STRING", "d ARRAY<BINARY>")

        def handleInputRows(
            self, key: Any, rows: Iterator[pd.DataFrame], timerValues: Any
        ) -> Iterator[pd.DataFrame]:
            started = time.perf_counter()
            calls = 0
            for frame in rows:
                for value, data in zip(frame["v"].tolist(), frame["d"].tolist(), strict=True):
                    held: list[bytes] = []
                    calls += 1
                    if self.slices.containsKey((value,)):
                        calls += 1
                        held = list(self.slices.getValue((value,))[0])
                    calls += 1
                    self.slices.updateValue((value,), ([*held, data],))
            micros = round((time.perf_counter() - started) * 1e6)
            yield pd.DataFrame({"k": [str(key[0])], "calls": [calls], "micros": [micros]})

        def close(self) -> None:
            pass

    return PerValue()


def _rows(batch: int, rows: int, groups: int, payload: int) -> pd.DataFrame:
    """One batch: each value recurs about twice per batch and across batches."""
    values = max(1, rows // 2)
    return pd.DataFrame(
        {
            "k": [str(i % groups) for i in range(rows)],
            "v": [f"value-{(i * 7919 + batch * 13) % values}" for i in range(rows)],
            "d": [os.urandom(payload) for _ in range(rows)],
        }
    )


def _run(spark: Any, strategy: str, args: argparse.Namespace, work: str) -> list[dict[str, float]]:
    source = os.path.join(work, strategy, "in")
    checkpoint = os.path.join(work, strategy, "checkpoint")
    seen: list[pd.DataFrame] = []
    measured = []
    for batch in range(args.batches):
        spark.createDataFrame(
            _rows(batch, args.rows, args.groups, args.payload), IN_DDL
        ).write.mode("append").parquet(source)
        grouped = spark.readStream.schema(IN_DDL).parquet(source).groupBy("k")
        if strategy == "blob":
            from pyspark.sql.streaming.state import GroupStateTimeout

            out = grouped.applyInPandasWithState(
                _blob, OUT_DDL, "docs BINARY", "append", GroupStateTimeout.NoTimeout
            )
        else:
            out = grouped.transformWithStateInPandas(_map_processor(), OUT_DDL, "append", "None")
        started = time.perf_counter()
        query = (
            out.writeStream.foreachBatch(lambda frame, _id: seen.append(frame.toPandas()))
            .option("checkpointLocation", checkpoint)
            .trigger(availableNow=True)
            .start()
        )
        query.awaitTermination()
        wall = time.perf_counter() - started
        groups = seen[-1]
        calls = int(groups["calls"].sum())
        python = float(groups["micros"].sum()) / 1e6
        measured.append(
            {
                "batch": batch,
                "wall": wall,
                "slowest": float(groups["micros"].max()) / 1e6,
                "python": python,
                "calls": calls,
                "per_call": python * 1e6 / calls if calls else 0.0,
                "rows_per_s": args.rows / python if python else 0.0,
            }
        )
    return measured


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=20_000, help="rows per micro-batch")
    parser.add_argument("--batches", type=int, default=3)
    parser.add_argument("--groups", type=int, default=4, help="grouping keys (value groups)")
    parser.add_argument("--payload", type=int, default=500, help="bytes stored per row")
    args = parser.parse_args()

    from xscl.spark_plugin.session import build_session

    work = tempfile.mkdtemp(prefix="xscl-state-calls-")
    spark = build_session(
        "local[2]",
        "xscl-state-calls",
        {"spark.sql.shuffle.partitions": "2"},
        home=os.path.join(work, "home"),
    )
    try:
        table = {s: _run(spark, s, args, work) for s in ("blob", "map")}
    finally:
        spark.stop()
        shutil.rmtree(work, ignore_errors=True)
    print(
        f"\n{args.rows:,} rows per batch, {args.groups} groups, {args.payload} B each, local[2]\n"
    )
    print(
        "| strategy | batch | wall s | slowest group s | Python s | state calls | µs per call "
        "| rows/s of Python |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for strategy, batches in table.items():
        for b in batches:
            print(
                f"| {strategy} | {b['batch']} | {b['wall']:.2f} | {b['slowest']:.2f} "
                f"| {b['python']:.2f} | {b['calls']:,} | {b['per_call']:.0f} "
                f"| {b['rows_per_s']:,.0f} |"
            )
    for strategy, batches in table.items():
        later = batches[1:] or batches
        print(
            f"{strategy}: median of batches after the first: wall "
            f"{statistics.median(b['wall'] for b in later):.2f} s, Python "
            f"{statistics.median(b['python'] for b in later):.2f} s"
        )


if __name__ == "__main__":
    main()
