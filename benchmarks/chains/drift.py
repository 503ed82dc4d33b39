"""Probe or cache a keyed chain's prefixes, when the stream drifts (issue 35, §4-5).

    python benchmarks/chains/drift.py                 # 12,000 documents, 100 a batch
    python benchmarks/chains/drift.py --reverse       # the halves the other way round
    python benchmarks/chains/drift.py --docs 4000     # smaller

One stream of posts by ``--authors`` authors, one a minute, each of a kind ``a``, ``b``
or ``c``; keyed chains "an ``a`` post, then a ``b`` post by the same author within a
window, then a ``c`` post by that author within a day"
(``posts/item[./author->k1][kind = 'a'] FOLLOWED BY {k1 = k2, W} ... [kind = 'c']``,
one query per window ``W``, one template). In the first half most posts are of kind
``c`` (the last block) and ``a`` and ``b`` posts fall hours apart, in the second most
are ``a`` and ``b`` (the prefix), at any hour: the blocks' selectivities swap halfway
(``--reverse``: the other way round).

Probing (``--join-plan probe``) walks, for each ``c`` post, the stored ``a`` and ``b``
posts of its author within a day; caching (``cache``) keeps the pairs of ``a`` and
``b`` posts each query's window allows as they arrive, and checks each ``c`` post
against those; the adaptive plan (``adaptive``, the default of ``xscl serve``)
measures both per group and uses the cheaper (``engine.groups.join_plans``).

The job's executor logic runs in this one process, without Spark: routing
(``engine.routing``) and the value groups (``engine.groups.value_group``) with a
worker's live group states, batch by batch, as a Spark executor runs them (the plan
choice is the executor's). Each plan runs in a fresh process; the table gives each
one's CPU seconds per half and in all, and the result count (they must agree). Measure
with nothing else running on the machine.
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

MINUTE = 60_000_000
#: the windows between a query's ``a`` and ``b`` posts (one query each)
WINDOWS = ("1h", "2h", "4h", "6h")
#: the second half's share of kinds a, b, c
SECOND_HALF = (0.495, 0.495, 0.01)
PLANS = ("probe", "cache", "adaptive")


def queries() -> str:
    return "".join(
        f"w{n}: posts/item[./author->k1][kind = 'a'] FOLLOWED BY {{k1 = k2, {window}}}"
        f" posts/item[./author->k2][kind = 'b'] FOLLOWED BY {{k2 = k3, 1d}}"
        f" posts/item[./author->k3][kind = 'c'];\n"
        for n, window in enumerate(WINDOWS)
    )


def documents(
    count: int, authors: int, seed: int, reverse: bool = False
) -> list[tuple[str, int, str]]:
    """(docid, ts, xml), one a minute. First half: ``a`` posts in the first hours of each
    day and ``b`` posts in the afternoon, ``c`` posts all day (an ``a`` and a ``b`` post
    are never within a query's window of each other: caching pays); second half: ``a``
    and ``b`` posts at any hour, and ``c`` posts rare (probing pays). ``reverse``: the
    halves the other way round."""
    rng = random.Random(seed)
    out = []
    for n in range(count):
        hour = (n // 60) % 24
        if (n < count // 2) != reverse:
            kind = rng.choices(
                "ac" if hour < 6 else "bc" if 12 <= hour < 18 else "c",
                (0.6, 0.4) if hour < 6 or 12 <= hour < 18 else (1,),
            )[0]
        else:
            kind = rng.choices("abc", SECOND_HALF)[0]
        author = f"author{rng.randrange(authors)}"
        xml = f"<item><author>{author}</author><kind>{kind}</kind></item>"
        out.append((f"p{n}", n * MINUTE, xml))
    return out


def measure(
    plan: str, count: int, authors: int, batch: int, seed: int, reverse: bool = False
) -> dict[str, Any]:
    """One plan's run in this process: CPU seconds per half and the result count."""
    from xscl.engine.groups.decoded import DecodedDocs
    from xscl.engine.groups.join_plans import plan_choice
    from xscl.engine.groups.routed import GroupContext, RoutedDoc
    from xscl.engine.groups.stored import GroupMemory
    from xscl.engine.groups.value_group import ValueGroup
    from xscl.engine.output import DocumentTrees
    from xscl.engine.records import RecordBuilder
    from xscl.engine.routing import SEQ_STRIDE, Router, RouteShape
    from xscl.service.live_queries import LiveQueries
    from xscl.service.subscriptions import SubscriptionLog

    docs = documents(count, authors, seed, reverse)
    with tempfile.TemporaryDirectory(prefix="xscl-drift-") as work:
        log = SubscriptionLog(Path(work) / "registry")
        log.subscribe(queries(), source="drift.xscl")
        log.record_applied(1, 0)
        subs_queries = LiveQueries().at(str(Path(work) / "registry"), 1)
    subs, table = subs_queries.subscriptions, subs_queries.routing()

    class Store:
        def xml(self, seq: int) -> str:
            return docs[seq // SEQ_STRIDE][2]

    lateness = 0
    shape = RouteShape(tuple(range(16)), 1, lateness)
    router = Router(shape, subs, table, RecordBuilder(subs.record_plan))
    choice = plan_choice(plan)
    memory: GroupMemory[Any] = GroupMemory()
    decoded = DecodedDocs()
    trees = DocumentTrees()
    snapshots: dict[int, bytes | None] = {}
    results = 0
    halves = [0.0, 0.0]
    newest: int | None = None
    for start in range(0, count, batch):
        routed: dict[int, list[RoutedDoc]] = defaultdict(list)
        for n in range(start, min(start + batch, count)):
            docid, ts, xml = docs[n]
            out = router.route(n, "posts", docid, ts, xml, newest)
            newest = ts if newest is None else max(newest, ts)
            for row in out.rows:
                routed[row.group].append(
                    RoutedDoc(out.seq, out.newest, row.homes, row.probes, row.data)
                )
        began = time.process_time()
        for key in sorted(routed):
            records = RecordBuilder(subs.record_plan, trees)
            context = GroupContext(
                subs, Store(), records, lateness, None, decoded, memory, key, choice
            )
            group = ValueGroup(snapshots.get(key), context)
            results += sum(1 for _ in group.process(routed[key]))
            snapshots[key] = group.snapshot()
        halves[0 if start < count // 2 else 1] += time.process_time() - began
    cached = getattr(choice, "chosen", {})
    return {
        "plan": plan,
        "first": halves[0],
        "second": halves[1],
        "results": results,
        "caching_at_end": sum(1 for on in cached.values() if on),
        "decisions": len(cached),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--docs", type=int, default=12_000, help="documents (default 12,000)")
    parser.add_argument("--authors", type=int, default=20, help="authors (default 20)")
    parser.add_argument("--batch", type=int, default=100, help="documents per batch")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--plans", nargs="+", default=list(PLANS), choices=PLANS)
    parser.add_argument(
        "--reverse", action="store_true", help="probing pays in the first half, caching after"
    )
    parser.add_argument("--measure", choices=PLANS, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.measure:
        run = measure(args.measure, args.docs, args.authors, args.batch, args.seed, args.reverse)
        print(json.dumps(run))
        return 0
    rows = []
    for plan in args.plans:
        command = [
            sys.executable, __file__, "--measure", plan, "--docs", str(args.docs),
            "--authors", str(args.authors), "--batch", str(args.batch), "--seed", str(args.seed),
            *(["--reverse"] if args.reverse else []),
        ]  # fmt: skip
        started = time.time()
        done = subprocess.run(command, check=True, capture_output=True, text=True)
        run = json.loads(done.stdout.strip().splitlines()[-1])
        run["wall"] = time.time() - started
        rows.append(run)
        print(f"  {plan}: {json.dumps(run)}", flush=True)
    fixed = [r for r in rows if r["plan"] != "adaptive"]
    print()
    print(
        f"{'plan':>9} | {'1st half CPU s':>14} | {'2nd half CPU s':>14} | {'total CPU s':>11} | "
        f"{'wall s':>6} | {'results':>8} | {'2nd half / best fixed':>21}"
    )
    print("-" * 100)
    for row in rows:
        best = min((r["second"] for r in fixed), default=0.0)
        ratio = f"{row['second'] / best:.2f}" if best else "-"
        print(
            f"{row['plan']:>9} | {row['first']:>14.2f} | {row['second']:>14.2f} | "
            f"{row['first'] + row['second']:>11.2f} | {row['wall']:>6.1f} | "
            f"{row['results']:>8} | {ratio:>21}"
        )
    counts = {row["results"] for row in rows}
    print(f"results agree: {'yes' if len(counts) == 1 else 'NO'}")
    return 0 if len(counts) == 1 else 1


if __name__ == "__main__":
    sys.exit(main())
