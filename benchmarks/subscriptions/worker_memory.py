"""A Python worker's memory and CPU per subscription while it registers them
(issue 34, deliverable 5), for one checkout.

    PYTHONPATH=CHECKOUT python benchmarks/subscriptions/worker_memory.py 100000 mixed

The queries of ``run.py``'s kind (``queries_text``) are parsed first; then, as a worker
registers compiled queries (``service.live_queries.JobQueries``): the normal form and
template through its ``ShapeMemo``, each query placed (``placements``) and added to
its ``Subscriptions``. Printed: the registration's CPU seconds (this process) and the
growth of the resident set over it, per subscription. Run it in a fresh process per
cell, with nothing else on the machine for the CPU figure.
"""

from __future__ import annotations

import gc
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import run  # the subscription kinds and the feed vocabulary
from rss_memory import current_rss

from xscl.lang.parser import parse_queries
from xscl.service.compiled.table import CompiledQuery
from xscl.service.live_queries import JobQueries


def _placer(queries: dict[str, CompiledQuery]) -> dict[str, Any]:
    """Each query's placement, with the checkout's own placing function."""
    try:
        from xscl.engine.placements import Placeable, place_queries
    except ImportError:  # a checkout before ``place_queries`` (24dfb83 and earlier)
        placement = getattr(JobQueries, "_placement")  # noqa: B009 (gone from newer checkouts)
        published = {c.query.publish for c in queries.values() if c.query.publish}
        return {qid: placement(c, published) for qid, c in queries.items()}
    return place_queries(
        {qid: Placeable.of(c.normal, c.assignment.template) for qid, c in queries.items()}
    )


def main(argv: list[str]) -> int:
    count, kind = int(argv[0]), argv[1]
    queries = parse_queries(run.queries_text(kind, count, run.load_items()))
    gc.collect()
    rss, cpu = current_rss(), time.process_time()
    built = JobQueries()
    compiled: dict[str, CompiledQuery] = {}
    for query in queries:
        normal = built.shapes.normal(query)
        compiled[query.qid] = CompiledQuery(normal, built.shapes.assignment(normal))
    places = _placer(compiled)
    for qid, each in compiled.items():
        built.subscriptions.add_query(
            each.normal,
            placement=places[qid],
            assignment=each.assignment,
            since=0,
        )
    kept = getattr(built, "queries", None)  # a checkout whose worker kept them (before 26)
    if kept is not None:
        kept.update(compiled)
    del compiled, each
    cpu = time.process_time() - cpu
    gc.collect()
    grown = current_rss() - rss
    print(
        f"{kind} {count:,}: register {cpu:.1f} CPU-s, resident set +{grown / count:,.0f} B "
        f"per subscription ({grown / 2**20:,.0f} MiB)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
