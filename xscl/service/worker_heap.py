"""A Python worker's long-lived objects kept out of the cyclic garbage collector's way.

PySpark's daemon runs ``gc.collect()`` after every task of a reused Python worker
(``pyspark/daemon.py``). A worker of this job holds the registered subscriptions
(``live_queries.LiveQueries``: ASTs, R_T rows and tries, Stage 1 plans, millions of
objects at 10k subscriptions), so each of those full collections walked all of them:
at 10k subscriptions it was about a sixth of the job's CPU (docs/benchmarks.md,
"The worker's collections"). ``settled`` moves what is alive once a registration is
built into the collector's permanent generation (``gc.freeze``), which
``gc.collect()`` skips; what tasks allocate afterwards is still collected.

A later registry event that only adds queries is settled by collecting what is not
frozen (what the event allocated) and freezing what survives: its cost follows the
event, not the queries already registered. An event that removes queries (an
unsubscribe, or a query subscribed again) first puts the frozen objects back
(``settled(removed=True)``), so reference cycles among the removed queries are
reclaimed by the full collection. Measured (an ad-hoc timing of ``LiveQueries.at``,
20,000 mixed subscriptions registered, one more subscribed at a time): 1.35-1.7 CPU-s
per event before, nearly all of it the collection over the whole heap; 1 ms after.

Where it runs: executors, in each Python worker, once per registry version it
builds.

>>> import gc
>>> settled()
>>> gc.get_freeze_count() > 0
True
>>> settled(removed=True)
>>> gc.get_freeze_count() > 0
True
>>> gc.unfreeze()
"""

from __future__ import annotations

import ctypes
import ctypes.util
import gc


def settled(*, removed: bool = False) -> None:
    """Collect, then exempt every object alive from later collections; ``removed``:
    queries were removed since the last time, so the exempted objects are collected
    too (see the module docstring)."""
    if removed:
        gc.unfreeze()
    gc.collect()
    gc.freeze()


def release_free_memory() -> None:
    """Give the C heap's free pages back to the system (glibc's ``malloc_trim``; nothing
    elsewhere). Python returns its own arenas when they empty, but the C allocator keeps
    the free space of large objects: after a build or a compile task that parsed a large
    event, that space stayed in the worker's resident set. Measured on a 100,000-query
    build in one process: 1,562 MiB grown, 1,373 MiB after the trim."""
    name = ctypes.util.find_library("c")
    if name is None:
        return
    try:
        trim = ctypes.CDLL(name).malloc_trim
    except (OSError, AttributeError):  # not glibc
        return
    trim(0)
