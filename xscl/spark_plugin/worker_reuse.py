"""Whether ``xscl serve``'s Python workers are forked afresh for every task.

Spark reuses a Python worker for many tasks (``spark.python.worker.reuse``). Forked
from the worker daemon that built the subscriptions (``worker_daemon``), a worker
shares the daemon's pages until it writes one, and CPython writes an object's reference
count whenever it reads it: a reused worker keeps every page its tasks read, copied.
With fresh workers each task is a new fork and its copies go when it ends. Measured
(docs/benchmarks.md, "Where a worker's memory goes"): at 100,000 subscriptions, fresh
workers took the tree's peak PSS from 5.1 to 3.3 GiB for the same wall time, and the
second batch 4.2 s more (pyspark's imports in each new worker); at 1,000,000 on
24 GB, only fresh workers (and batches of 20 records) let the job run at all. So
``auto`` turns them on from ``FRESH_WORKERS_FROM`` subscriptions, where a reused
worker's copies would no longer fit beside the daemon's build on one machine; below
it the batches keep their latency.

Under ``spark-submit`` (``spark_plugin.submit``) xscl leaves the setting to Spark's own
configuration (``--fresh-workers`` is ``off`` there): give it
``--conf spark.python.worker.reuse=false`` for a large registry.

Where it runs: the driver, once per ``xscl serve`` start (the session's settings).

>>> fresh_workers("auto", 10_000), fresh_workers("auto", FRESH_WORKERS_FROM)
(False, True)
>>> fresh_workers("on", 0), fresh_workers("off", 10**7)
(True, False)
"""

from __future__ import annotations

#: ``--fresh-workers auto`` turns them on from this many subscriptions at start.
FRESH_WORKERS_FROM = 250_000
#: Spark's setting.
REUSE_SETTING = "spark.python.worker.reuse"


def fresh_workers(choice: str, subscriptions: int) -> bool:
    """Whether tasks get fresh workers: ``choice`` is ``--fresh-workers`` (auto, on, off),
    ``subscriptions`` how many the registry holds at start."""
    if choice == "auto":
        return subscriptions >= FRESH_WORKERS_FROM
    return choice == "on"
