"""PySpark's worker daemon for the kill tests, marking and holding Stage 1 on the executors.

A killed job runs with ``spark.python.daemon.module=tests.spark.stage1_daemon``
(``PYSPARK_SUBMIT_ARGS``) and ``XSCL_STAGE1_MARKS`` naming a folder. It is
``pyspark.daemon`` itself, except that every worker it forks wraps
``Router.route`` (Stage 1 of the job's source, ``xscl.engine.routing``), once per record:

* on entry it creates ``<pid>-<n>.begin`` in the folder, on return ``<pid>-<n>.end``:
  a ``begin`` without its ``end`` is a task inside Stage 1 (``tests/spark/killing.py``,
  kill point ``stage1``);
* while the folder holds ``armed``, it waits there (at most ``HOLD_SECONDS``) before
  evaluating, so the kill lands inside Stage 1 and not after it.

The wrap is installed after the fork, as ``pyspark.daemon`` imports the worker
module: importing pyarrow (which the job's source does) before forking is unsafe.
Nothing else of the job changes: an unarmed run gives the same results.
"""

from __future__ import annotations

import itertools
import os
import time
from pathlib import Path
from typing import Any

from pyspark import daemon

MARKS = "XSCL_STAGE1_MARKS"
ARMED = "armed"
HOLD_SECONDS = 120.0
_serve = daemon.worker
_wrapped = False


def _hold_stage1(folder: Path) -> None:
    """Wrap ``Router.route`` with the marks and the hold (in a forked worker)."""
    from xscl.engine.routing import Router

    route = Router.route
    calls = itertools.count()

    def marked_route(self: Router, *args: Any, **kwargs: Any) -> Any:
        name = f"{os.getpid()}-{next(calls)}"
        (folder / f"{name}.begin").touch()
        deadline = time.monotonic() + HOLD_SECONDS
        while (folder / ARMED).exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        try:
            return route(self, *args, **kwargs)
        finally:
            (folder / f"{name}.end").touch()

    Router.route = marked_route  # type: ignore[method-assign]


def _worker(sock: Any, authenticated: bool) -> int:
    """``pyspark.daemon.worker`` (one call per task a reused worker serves), wrapped once."""
    global _wrapped
    folder = os.environ.get(MARKS)
    if folder and not _wrapped:
        _hold_stage1(Path(folder))
        _wrapped = True
    code: int = _serve(sock, authenticated)
    return code


daemon.worker = _worker

if __name__ == "__main__":
    daemon.manager()
