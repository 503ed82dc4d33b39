"""What a Python worker of ``xscl serve`` keeps after it builds its subscriptions, and
what one more subscribe event costs it (issue 34).

    PYTHONPATH=CHECKOUT python benchmarks/subscriptions/worker_build.py 10000
    PYTHONPATH=CHECKOUT python benchmarks/subscriptions/worker_build.py 20000 --events 5

A registry of N mixed subscriptions (``run.queries_text``, the feeds' vocabulary) is
written, then built as a worker builds it, ``LiveQueries().at(registry, 1)`` from the
texts, under ``tracemalloc``: printed, the bytes still allocated after the build, per
subscription (tracing slows the build about 4x: its CPU figure is not a speed). Then,
without tracing, ``--events`` more events of one subscription each, and the CPU each
``LiveQueries.at`` took. Run it in a fresh process per cell, alone, from the folder of
the checkout measured (``run.py`` is imported from there).
"""

from __future__ import annotations

import argparse
import gc
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import run  # the subscription kinds and the feed vocabulary

from xscl.service.live_queries import LiveQueries
from xscl.service.subscriptions import SubscriptionLog


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("count", type=int, help="mixed subscriptions")
    parser.add_argument("--events", type=int, default=5, help="one-query events after it")
    args = parser.parse_args(argv)
    text = run.queries_text("mixed", args.count, run.load_items())
    work = Path(tempfile.mkdtemp(prefix="xscl-worker-build-"))
    registry = str(work / "registry")
    log = SubscriptionLog(work / "registry")
    log.subscribe(text, source="big.xscl")
    log.record_applied(1, 0)
    del text
    gc.collect()
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    started = time.process_time()
    live = LiveQueries()
    live.at(registry, 1)
    cpu = time.process_time() - started
    gc.unfreeze()
    gc.collect()
    kept = (tracemalloc.get_traced_memory()[0] - base) / args.count
    tracemalloc.stop()
    gc.freeze()
    print(
        f"{args.count:,} mixed: the build keeps {kept:,.0f} B per subscription (tracemalloc; "
        f"{cpu:.1f} CPU-s under tracing)"
    )
    times = []
    for n in range(args.events):
        log.subscribe(f"extra{n}: web/item[contains(title, 'word{n}')];", source="one.xscl")
        log.record_applied(2 + n, 0)
        started = time.process_time()
        live.at(registry, 2 + n)
        times.append(time.process_time() - started)
    print(
        "one more subscription per event: " + " ".join(f"{t * 1000:.0f}" for t in times) + " ms CPU"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
