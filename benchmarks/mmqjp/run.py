"""MMQJP vs Sequential: thesis section 6.6 reproduced on this machine.

    python benchmarks/mmqjp/run.py            # full run (queries up to 100,000)
    python benchmarks/mmqjp/run.py --quick    # smaller sweeps (queries up to 10,000)

Setup (thesis 6.6.1): two hand-made documents d1, d2 over a schema, whose
leaves in the same position hold the same string value and all other values
differ. Queries are generated as in Figure 6.17: k ~ Zipf(s) over 1..N (1..K on
the three-level schema), k distinct leaves per side chosen uniformly, joined
position by position ``v_i = v'_i``, ``FOLLOWED BY`` with a 1 h window. d1 is
processed first (state), then d2 is the measured document.

Columns:
* ``MMQJP join``: the shared join processor for d2 (every template, every role:
  view-cache slices, R_bin probes, the R_T hash join, Algorithm 3's window test),
  median of 5 runs -- the quantity of the thesis's figures;
* ``MMQJP total``: d2 end to end: Stage 1 + join + result records and XML,
  each the median of 5 runs (the machine is shared: medians resist noise);
* ``Sequential``: ``xscl.reference.evaluate_query`` run query by query over
  (d1, d2) (it also does its own tree-pattern matching, as a per-query engine
  must); above ``--sample`` queries it is measured on a random sample and
  extrapolated linearly (marked ``~``);
* ``vs join`` = Sequential / MMQJP join (the thesis compares join processing);
  ``vs total`` = Sequential / MMQJP total.
Memory: bytes allocated (tracemalloc) by registering the queries, per query.
"""

from __future__ import annotations

import argparse
import email.utils
import gc
import random
import statistics
import sys
import time
import tracemalloc
from collections.abc import Callable, Sequence
from dataclasses import replace
from decimal import Decimal
from pathlib import Path

from lxml import etree

from xscl import reference
from xscl.engine import LocalEngine
from xscl.engine.state import DocState
from xscl.lang.ast import (
    Block,
    Equality,
    JoinOp,
    NodeTest,
    PathPredicate,
    Query,
    RelPath,
    Step,
    Window,
)
from xscl.lang.normal_form import normalize
from xscl.lang.normal_form.model import NormalQuery

FEEDS = Path(__file__).resolve().parents[2] / ".." / "shared" / "data" / "feeds-stream-youthopp"
HOUR = Window(Decimal(1), "h")


# ----------------------------------------------------------------- workloads
def element(name: str, var: str | None = None, preds: tuple[PathPredicate, ...] = ()) -> Step:
    return Step("/", NodeTest("element", name), var, preds)


def zipf_k(rng: random.Random, top: int, s: float) -> int:
    weights = [1.0 / (k**s) for k in range(1, top + 1)]
    return rng.choices(range(1, top + 1), weights)[0]


def flat_side(prefix: str, leaves: Sequence[int]) -> Block:
    preds = tuple(
        PathPredicate(RelPath((element(f"f{leaf}", f"{prefix}{i + 1}"),)))
        for i, leaf in enumerate(leaves)
    )
    return Block("S", (element("item", f"{prefix}0", preds),))


def complex_side(prefix: str, leaves: Sequence[int]) -> Block:
    by_mid: dict[int, list[tuple[int, int]]] = {}
    for i, leaf in enumerate(leaves):
        by_mid.setdefault(leaf // 4, []).append((i, leaf))
    preds = tuple(
        PathPredicate(
            RelPath(
                (
                    element(
                        f"m{mid}",
                        f"{prefix}m{mid}",
                        tuple(
                            PathPredicate(RelPath((element(f"l{leaf}", f"{prefix}{i + 1}"),)))
                            for i, leaf in members
                        ),
                    ),
                )
            )
        )
        for mid, members in sorted(by_mid.items())
    )
    return Block("S", (element("r", f"{prefix}0", preds),))


def generate(schema: str, count: int, leaves: int, top_k: int, s: float, seed: int) -> list[Query]:
    rng = random.Random(seed)
    side = flat_side if schema == "flat" else complex_side
    out = []
    for number in range(count):
        k = zipf_k(rng, top_k, s)
        left = rng.sample(range(leaves), k)
        right = rng.sample(range(leaves), k)
        eqs = tuple(Equality(f"a{i + 1}", f"b{i + 1}") for i in range(k))
        out.append(
            Query(
                f"q{number}",
                (side("a", left), side("b", right)),
                (JoinOp("FOLLOWED BY", eqs, HOUR),),
            )
        )
    return out


def documents(schema: str, leaves: int) -> list[tuple[str, str, int, str]]:
    if schema == "flat":
        body = "".join(f"<f{j}>value {j}</f{j}>" for j in range(leaves))
        xml = f"<item>{body}</item>"
    else:
        mids = "".join(
            f"<m{m}>"
            + "".join(f"<l{leaf}>value {leaf}</l{leaf}>" for leaf in range(4 * m, 4 * m + 4))
            + f"</m{m}>"
            for m in range(4)
        )
        xml = f"<r>{mids}</r>"
    return [("S", "d1", 0, xml), ("S", "d2", 1_000_000, xml)]


class Normalizer:
    """normalize() once per distinct query shape (query ids aside): registration is not measured."""

    def __init__(self) -> None:
        self.memo: dict[Query, NormalQuery] = {}

    def __call__(self, query: Query) -> NormalQuery:
        key = replace(query, qid="_")
        normal = self.memo.get(key)
        if normal is None:
            normal = normalize(key)
            self.memo[key] = normal
        return replace(normal, query=query)


# ---------------------------------------------------------------- measuring
def timed(fn: Callable[[], object], repeat: int = 5) -> float:
    """Median wall time of ``fn`` (garbage collector paused while timing)."""
    runs = []
    for _ in range(repeat):
        gc.collect()
        gc.disable()
        try:
            start = time.perf_counter()
            fn()
            runs.append(time.perf_counter() - start)
        finally:
            gc.enable()
    return statistics.median(runs)


def measure(
    queries: list[Query],
    docs: list[tuple[str, str, int, str]],
    sample: int,
    view_cache: bool = True,
    sequential: bool = True,
) -> dict[str, object]:
    normal = Normalizer()
    engine = LocalEngine([normal(q) for q in queries], view_cache=view_cache)
    engine.process(docs[:1])
    stream, docid, ts, xml = docs[1]
    rows = engine.stage1.evaluate_rows(stream, docid, ts, xml)
    d2 = DocState.from_rows(stream, docid, ts, xml, 10**9, rows)
    matches = engine.matches(d2)
    stage1 = timed(lambda: engine.stage1.evaluate_rows(stream, docid, ts, xml))
    join = timed(lambda: engine.matches(d2))
    output = timed(lambda: [engine.record(m) for m in matches])
    total = stage1 + join + output
    results = engine.process(docs[1:])
    row: dict[str, object] = {
        "queries": len(queries),
        "templates": engine.template_count,
        "join": join,
        "total": total,
        "results": len(results),
        "matches": len(matches),
    }
    if sequential:
        ref_docs = [reference.make_document(*d) for d in docs]
        chosen = queries if len(queries) <= sample else random.Random(1).sample(queries, sample)
        start = time.perf_counter()
        seq_results = sum(len(reference.evaluate_query(q, ref_docs)) for q in chosen)
        elapsed = time.perf_counter() - start
        row["sequential"] = elapsed * len(queries) / len(chosen)
        row["extrapolated"] = len(chosen) < len(queries)
        if len(chosen) == len(queries):
            assert seq_results == len(results), (seq_results, len(results))
    return row


def bytes_per_query(queries: list[Query]) -> float:
    normal = Normalizer()
    prepared = [normal(q) for q in queries]
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    engine = LocalEngine(prepared)
    after = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    assert engine.template_count > 0
    return (after - before) / len(queries)


# ------------------------------------------------------------------ printing
def table(title: str, key: str, rows: list[dict[str, object]]) -> None:
    print(f"\n{title}")
    head = (
        f"{key:>9} | {'templates':>9} | {'results':>7} | {'MMQJP join':>11} | "
        f"{'MMQJP total':>11} | {'Sequential':>12} | {'vs join':>7} | {'vs total':>8}"
    )
    print(head)
    print("-" * len(head))
    for row in rows:
        seq = row.get("sequential")
        total = float(row["total"])  # type: ignore[arg-type]
        join = float(row["join"])  # type: ignore[arg-type]
        if seq is None:
            seq_text, speed, speed_join = "-", "-", "-"
        else:
            mark = "~" if row.get("extrapolated") else ""
            seq_s = float(seq)  # type: ignore[arg-type]
            seq_text, speed = f"{mark}{seq_s:.4f} s", f"{seq_s / total:.0f}x"
            speed_join = f"{seq_s / join:.0f}x"
        print(
            f"{row[key]!s:>9} | {row['templates']!s:>9} | {row['results']!s:>7} | "
            f"{float(row['join']):>9.4f} s | {total:>9.4f} s | "  # type: ignore[arg-type]
            f"{seq_text:>12} | {speed_join:>7} | {speed:>8}"
        )


def feed_items(days: int) -> list[tuple[str, str, int, str]]:
    parser = etree.XMLParser(resolve_entities=False, no_network=True, load_dtd=False)
    docs = []
    for path in sorted(FEEDS.glob("*.xml"))[:days]:
        root = etree.parse(str(path), parser).getroot()
        for item in root.iter("item"):
            stamp = email.utils.parsedate_to_datetime(item.findtext("pubDate") or "")
            docs.append(
                (
                    "feed",
                    item.findtext("guid") or "",
                    int(stamp.timestamp()) * 1_000_000,
                    etree.tostring(item, encoding="unicode"),
                )
            )
    return docs


def feed_queries(count: int, seed: int) -> list[Query]:
    """Thesis 6.6.3: queries over the item leaves, generated as in 6.6.1, window INF."""
    rng = random.Random(seed)
    leaves = ("title", "link", "creator", "category", "guid", "pubDate")
    out = []
    for number in range(count):
        k = zipf_k(rng, 3, 0.8)
        sides = []
        for prefix in "ab":
            chosen = rng.sample(leaves, k)
            preds = tuple(
                PathPredicate(RelPath((element(leaf, f"{prefix}{i + 1}"),)))
                for i, leaf in enumerate(chosen)
            )
            sides.append(Block("feed", (element("item", None, preds),)))
        eqs = tuple(Equality(f"a{i + 1}", f"b{i + 1}") for i in range(k))
        out.append(Query(f"f{number}", tuple(sides), (JoinOp("JOIN", eqs, Window(None)),)))
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--quick", action="store_true", help="smaller sweeps: queries up to 10,000, smaller samples"
    )
    parser.add_argument(
        "--sample",
        type=int,
        default=None,
        help="Sequential measures at most this many queries, then extrapolates",
    )
    args = parser.parse_args(argv)
    quick = args.quick
    sample = args.sample or (50 if quick else 400)
    counts = [10, 100, 1000, 10_000] + ([] if quick else [100_000])
    big = counts[-1]
    began = time.perf_counter()
    print(f"MMQJP benchmark ({'quick' if quick else 'full'}); Python {sys.version.split()[0]}")

    flat_docs = documents("flat", 6)
    rows = [measure(generate("flat", n, 6, 6, 0.8, seed=n), flat_docs, sample) for n in counts]
    table(
        "Two-level schema (N=6, Zipf 0.8): varying the number of queries (Fig. 6.8)",
        "queries",
        rows,
    )
    rows = []
    for n_leaves in (4, 6, 8, 10, 12):
        row = measure(
            generate("flat", 1000, n_leaves, n_leaves, 0.8, seed=n_leaves),
            documents("flat", n_leaves),
            sample,
        )
        row["N"] = n_leaves
        rows.append(row)
    table("Two-level schema (1000 queries, Zipf 0.8): varying N leaves (Fig. 6.9)", "N", rows)
    rows = []
    for s in (0.0, 0.4, 0.8, 1.2, 1.6):
        row = measure(generate("flat", 1000, 6, 6, s, seed=int(s * 10)), flat_docs, sample)
        row["zipf"] = s
        rows.append(row)
    table(
        "Two-level schema (1000 queries, N=6): varying the Zipf parameter (Fig. 6.10)", "zipf", rows
    )

    complex_docs = documents("complex", 16)
    rows = [
        measure(generate("complex", n, 16, 4, 0.8, seed=n), complex_docs, sample) for n in counts
    ]
    table(
        "Three-level schema (branching 4, K=4, Zipf 0.8): varying queries (Fig. 6.11)",
        "queries",
        rows,
    )
    rows = []
    for top_k in (2, 3, 4, 5):
        row = measure(generate("complex", 1000, 16, top_k, 0.8, seed=top_k), complex_docs, sample)
        row["K"] = top_k
        rows.append(row)
    table(
        "Three-level schema (1000 queries): varying K, max value joins per query (Fig. 6.12)",
        "K",
        rows,
    )

    cache_queries = 1000 if quick else big
    print(
        f"\nView cache (thesis 6.6.2), {cache_queries} queries, two fixed documents "
        "(MMQJP join for d2, no Sequential):"
    )
    print(f"{'schema':>8} | {'with cache':>10} | {'without':>10}")
    for schema, docs, leaves, top in (("flat", flat_docs, 6, 6), ("complex", complex_docs, 16, 4)):
        qs = generate(schema, cache_queries, leaves, top, 0.8, seed=5)
        on = measure(qs, docs, sample, view_cache=True, sequential=False)
        off = measure(qs, docs, sample, view_cache=False, sequential=False)
        print(f"{schema:>8} | {float(on['join']):>8.4f} s | {float(off['join']):>8.4f} s")  # type: ignore[arg-type]

    if FEEDS.is_dir():
        items = feed_items(3 if quick else 16)
        print(
            f"\nRSS stream (thesis 6.6.3): {len(items)} item deliveries of "
            "feeds-stream-youthopp, JOIN with INF windows, whole stream processed;\n"
            "join = time in the join processor, total = Stage 1 + join + result records and "
            "XML (items average ~24 KB, so output dominates)"
        )
        print(
            f"{'queries':>8} | {'templates':>9} | {'results':>7} | {'join+cache':>10} | "
            f"{'join, no VC':>11} | {'MMQJP total':>11} | {'Sequential':>11} | {'vs total':>8}"
        )
        for n in [100] if quick else [100, 1000, 10_000]:
            qs = feed_queries(n, seed=n)
            normal = Normalizer()
            prepared = [normal(q) for q in qs]
            joins: dict[bool, float] = {}
            for cache in (False, True):
                engine = LocalEngine(prepared, view_cache=cache)
                gc.collect()
                start = time.perf_counter()
                found = engine.process(items)
                total = time.perf_counter() - start
                joins[cache] = engine.stats.join_seconds
            ref_docs = [reference.make_document(*d) for d in items]
            chosen = random.Random(2).sample(qs, min(len(qs), 10 if quick else 20))
            start = time.perf_counter()
            for q in chosen:
                reference.evaluate_query(q, ref_docs)
            seq = (time.perf_counter() - start) * len(qs) / len(chosen)
            print(
                f"{n:>8} | {engine.template_count:>9} | {len(found):>7} | "
                f"{joins[True]:>8.2f} s | {joins[False]:>9.2f} s | {total:>9.2f} s | "
                f"~{seq:>8.1f} s | {seq / total:>7.0f}x"
            )
    else:
        print(f"\n(RSS stream table skipped: {FEEDS} not found)")

    n_mem = 2_000 if quick else 10_000
    print(
        f"\nMemory: {bytes_per_query(generate('flat', n_mem, 6, 6, 0.8, seed=9)):.0f} bytes per "
        f"registered query (two-level schema, {n_mem} queries, tracemalloc)"
    )
    print(f"\nwall time {time.perf_counter() - began:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
