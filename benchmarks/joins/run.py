"""The join processor on real feeds: value joins with hot values, ``--engine local``.

    python benchmarks/joins/run.py                      # 3,000 joins, every item
    python benchmarks/joins/run.py --items 1500 --census

1. Items: both feed corpora of the *mixed* workload (``feeds-kagi-smallweb`` as stream
   ``web``, ``feeds-stream-youthopp`` as ``youth``, ``normalized``), polled once into
   a spool under ``--work`` and replayed in event-time order
   (``benchmarks/spark_rss/mixed.py``).
2. Subscriptions (``--workload joins``): ``--subscriptions`` value joins of two blocks
   with 1-3 equalities on
   leaves whose values recur (author, category, the channel's title, title, link),
   within a stream or across, JOIN or FOLLOWED BY, literals drawn from the items
   weighted by their counts, and a ``--chain-share`` of three-block chains
   (``mixed.join_subscriptions``, deterministic for ``--seed``); ``--workload mixed``:
   the whole mixed workload of ``benchmarks/spark_rss`` (keyword alerts too).
3. ``xscl.engine.LocalEngine`` (what ``xscl run --engine local`` runs) registers them
   and processes the items in spool order, in this process. Printed: items/s, the
   CPU seconds of processing and of the join processor alone (``engine.matches``:
   Stage 1 and result records are the rest), the results and a digest
   of their ids (equal digests: the same results; compare runs of two checkouts by
   running this script with each on ``PYTHONPATH``).
4. ``--census``: where the candidates come from. Per template and role, how many
   (document, node) candidates its first value probe enumerates (the stored entries
   of the probed value's slice, restricted to the var ids the plan's R_T trie allows,
   within the plan's largest window) against the matches it yields, and the values
   whose probes enumerate the most candidates (the hot values).
"""

from __future__ import annotations

import argparse
import hashlib
import os
import sys
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "spark_rss"))

import mixed  # the mixed workload's corpora, spool and value drawing
import workload

from xscl.engine import LocalEngine
from xscl.engine.matcher import match_document
from xscl.engine.plans import RolePlan
from xscl.engine.state import DocState
from xscl.lang import parse_queries


def items_of(work: Path) -> list[Any]:
    """The mixed spool's items (polled into ``work`` the first time)."""
    spool = work / "mixed" / "spool"
    if not spool.is_dir():
        count = mixed.spool_mixed_items(work / "mixed")
        print(f"spool: {count} items (web, youth) in {spool}")
    return workload.read_items(spool)


class Census:
    """Per (template, role): first-probe candidates and matches; per value: candidates."""

    def __init__(self) -> None:
        self.candidates: Counter[tuple[str, int]] = Counter()
        self.matches: Counter[tuple[str, int]] = Counter()
        self.by_value: Counter[str] = Counter()
        self.labels: dict[int, str] = {}

    def count(self, engine: LocalEngine, new: DocState) -> None:
        """Count ``new``'s probes against the state before it is stored."""
        docs = [d for d in engine.docs.values() if d is not new]
        for plan in engine.subscriptions.plans():
            self._first_probe(engine, plan, new, docs, (self.label(plan), plan.role))

    def label(self, plan: RolePlan) -> str:
        """A template's name here: ``T<n> <blocks>b <equalities>eq`` (n: order first seen)."""
        template = plan.template
        name = self.labels.get(id(template))
        if name is None:
            name = f"T{len(self.labels)} {template.block_count}b {len(template.value_edges)}eq"
            self.labels[id(template)] = name
        return name

    def _first_probe(
        self,
        engine: LocalEngine,
        plan: RolePlan,
        new: DocState,
        docs: list[DocState],
        key: tuple[str, int],
    ) -> None:
        anchor = plan.probe_anchor()
        if anchor is None:
            return
        depth = next(d for d, s in enumerate(plan.steps) if s.kind == "value")
        probe_vars = plan.var_counts[depth]
        reach = plan.max_window
        found = 0
        for var in plan.var_counts[anchor]:
            for node in new.nodes.get(var, ()):
                value = new.values.get(node, "")
                if not value:
                    continue
                part = engine.cache.lookup([value], docs).get(value, {})
                n = sum(
                    1
                    for w in probe_vars
                    for doc, _ in part.get(w, ())
                    if doc is not new and (reach is None or abs(doc.ts - new.ts) <= reach)
                )
                found += n
                self.by_value[value] += n
        self.candidates[key] += found
        if found:
            state = engine.state
            self.matches[key] += sum(
                1
                for _ in match_document(
                    plan,
                    new,
                    lambda v: state.cache.lookup([v], docs).get(v, {}),
                    lambda: docs,
                )
            )

    def print(self, top: int) -> None:
        total_c, total_m = sum(self.candidates.values()), sum(self.matches.values())
        print(f"\ncensus: first-probe candidates {total_c:,}, matches {total_m:,}")
        print(f"{'template/role':<28} {'candidates':>12} {'matches':>9} {'accepted':>9}")
        for (template, role), n in self.candidates.most_common(top):
            m = self.matches[(template, role)]
            print(f"{template[:24]:<24} r{role:<3} {n:>12,} {m:>9,} {m / n if n else 0:>9.4f}")
        print(f"\n{'hot value':<48} {'candidates':>12}")
        for value, n in self.by_value.most_common(top):
            print(f"{value[:48]:<48} {n:>12,}")


def run(args: argparse.Namespace) -> int:
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    every = items_of(work)
    # drawn from every item, whatever ``--items``: the same subscriptions either way
    if args.workload == "mixed":
        queries = mixed.mixed_subscriptions(args.subscriptions, every, seed=args.subscriptions)
    else:
        queries = mixed.join_subscriptions(args.subscriptions, every, args.seed, args.chain_share)
    items = every[: args.items or None]
    started = time.perf_counter()
    engine = LocalEngine(parse_queries("\n".join(queries)))
    register_s = time.perf_counter() - started
    join_cpu = [0.0]
    matches = engine.matches

    def timed_matches(doc: DocState) -> list[Any]:
        """``engine.matches`` with its CPU time counted (the join processor alone)."""
        start = time.process_time()
        try:
            return matches(doc)
        finally:
            join_cpu[0] += time.process_time() - start

    engine.matches = timed_matches  # type: ignore[method-assign]
    census = Census() if args.census else None
    ids: list[str] = []
    cpu0, wall0 = sum(os.times()[:2]), time.perf_counter()
    for doc in items:
        ids.extend(
            r.result_id for r in engine.process_one(doc.stream, doc.docid, doc.ts_micros, doc.xml)
        )
        if census is not None:
            new = engine.docs.get((doc.stream, doc.docid))
            if new is not None:
                census.count(engine, new)
    cpu, wall = sum(os.times()[:2]) - cpu0, time.perf_counter() - wall0
    digest = hashlib.sha256("\n".join(sorted(ids)).encode()).hexdigest()[:16]
    rows = [
        ("subscriptions", f"{len(queries):,} ({engine.template_count} templates)"),
        ("register s", f"{register_s:.1f}"),
        ("items", f"{len(items):,}"),
        ("items/s (wall)", f"{len(items) / wall:.1f}" + (" (with census)" if census else "")),
        ("CPU s (processing)", f"{cpu:.1f}"),
        ("join processor s", f"{join_cpu[0]:.1f} CPU, {engine.stats.join_seconds:.1f} wall"),
        ("result records s", f"{engine.stats.output_seconds:.1f} (wall)"),
        ("results", f"{len(ids):,}"),
        ("results digest", digest),
    ]
    print(f"\n{'measure':<20} value")
    for name, value in rows:
        print(f"{name:<20} {value}")
    if census is not None:
        census.print(args.top)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--subscriptions", type=int, default=3000)
    parser.add_argument("--items", type=int, default=0, help="the first N items (0: all)")
    parser.add_argument(
        "--workload",
        choices=("joins", "mixed"),
        default="joins",
        help="joins: value joins only (default); mixed: benchmarks/spark_rss's mixed "
        "workload (keywords, joins, chains, PUBLISH pairs; seed = the count, as there)",
    )
    parser.add_argument("--seed", type=int, default=35)
    parser.add_argument("--chain-share", type=float, default=mixed.CHAIN_SHARE)
    parser.add_argument("--census", action="store_true", help="count candidates (slower)")
    parser.add_argument("--top", type=int, default=12)
    parser.add_argument("--work", default="/tmp/xscl-bench-joins", help="the spool's folder")
    return run(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
