"""A Python worker's long-lived objects kept out of the cyclic garbage collector's way.

PySpark's daemon runs ``gc.collect()`` after every task of a reused Python worker
(``pyspark/daemon.py``). A worker of this job holds the registered subscriptions
(``live_queries.LiveQueries``: ASTs, R_T rows and tries, Stage 1 plans, millions of
objects at 10k subscriptions), so each of those full collections walked all of them:
at 10k subscriptions it was about a sixth of the job's CPU (docs/benchmarks.md,
"The worker's collections"). ``settled`` moves what is alive once a registration is
built into the collector's permanent generation (``gc.freeze``), which
``gc.collect()`` skips; what tasks allocate afterwards is still collected.

Before the next rebuild ``unsettled`` puts the frozen objects back, so reference
cycles among the queries a later event removes are still reclaimed.

Where it runs: executors, in each Python worker, once per registry version it
builds (a full collection then: the one the daemon would have run next anyway).

>>> import gc
>>> settled()
>>> gc.get_freeze_count() > 0
True
>>> unsettled()
>>> gc.get_freeze_count()
0
"""

from __future__ import annotations

import gc


def settled() -> None:
    """Collect once, then exempt every object alive from later collections."""
    gc.collect()
    gc.freeze()


def unsettled() -> None:
    """Return the exempted objects to the collector (before a rebuild)."""
    gc.unfreeze()
