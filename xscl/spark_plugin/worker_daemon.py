"""Spark's Python worker daemon, importing pyspark from its installed, compiled copy.

Spark puts ``$SPARK_HOME/python/lib/pyspark.zip`` (and py4j's zip) first on every
Python worker's path. Python's ``zipimport`` keeps no bytecode cache, so each forked
worker compiled the source of the pyspark modules it imports (``pyspark.worker`` alone
is 4,000 lines) every time: 10% of the Python workers' CPU in a 10k-subscription run
of the job (py-spy over the process tree, docs/benchmarks.md). A pip-installed
pyspark ships the same modules as a package with ``.pyc`` files beside the zip.

``spark.python.daemon.module`` (``session.session_conf``) names this module: it moves
each such zip behind the installed package when both hold the same version, then runs
pyspark's own daemon unchanged, so the workers it forks import the compiled copy. Where
no installed copy of that version exists (a Spark distribution's executors without a
pip pyspark), the path is left as Spark made it.

**Subscriptions built once per executor.** When the job names its registry in the
daemon's environment (``PREBUILD_ENV``, set by ``xscl serve`` through
``spark.executorEnv``), the daemon registers every subscription before it forks any
worker (``LiveQueries.prebuild``: Stage 1's automaton and index, the R_T tries, the
output plans), freezes them out of the collector's way (``gc.freeze``), and each worker
it forks starts with them, adopting them rebased to its epoch's offsets. With
``WARM_ENV`` (the job's spool) it first runs Stage 1 over the spool's first
``WARM_DOCUMENTS`` documents, so the automaton's transitions and presearch screens those
need are built in the daemon too: a worker that built them after the fork read every
candidate of a transition, and CPython writes a reference count on every read, so it
copied those pages. At 100k subscriptions (in one process, forked): 729 MiB copied at
the first document and 745 MiB over 200 unwarmed; warmed on 200, 285 MiB over the next
200. Without a build here, every Python worker built them itself; measured on its own
the gain was inside the run-to-run spread (docs/benchmarks.md, "Subscriptions built
once per executor"). A failure here only costs that time: the workers build their own.

Where it runs: on every executor (and the driver in local mode), once per Python
daemon Spark starts; nothing here is pickled. It must not import pyspark before the
path is settled (``xscl`` and ``xscl.spark_plugin`` do not).
"""

from __future__ import annotations

import os
import sys
import zipfile
from collections.abc import Mapping
from typing import Any

#: The module of each zipped package whose bytes must match the installed copy's.
VERSION_FILES = ("pyspark/version.py", "py4j/version.py")
#: The daemon's environment variable naming the job's registry to build before forking.
PREBUILD_ENV = "XSCL_PREBUILD_REGISTRY"
#: The daemon's environment variable naming the job's input spool: the build is warmed on
#: its first ``WARM_DOCUMENTS`` documents before forking (``JobQueries.warm``).
WARM_ENV = "XSCL_PREBUILD_SPOOL"
WARM_DOCUMENTS = 200
#: In the compile job's Python workers' environment (``compile_job`` sets it in
#: ``SparkContext.environment``, by which Spark keys its Python daemons): they run in a
#: daemon of their own, which builds no subscriptions. The streaming job's daemon starts
#: after the compile job and builds from the compiled table; without the mark the compile
#: job's tasks started it first, and it built every subscription from its text before the
#: job compiled them (docs/benchmarks.md, "The compile job's own daemon").
COMPILE_ENV = "XSCL_COMPILE_JOB"


def installed_first(path: list[str]) -> list[str]:
    """``path`` with each pyspark/py4j zip moved to the end when a directory on the path
    holds the same package at the same version (its ``version.py`` byte for byte).

    >>> import tempfile, pathlib
    >>> root = pathlib.Path(tempfile.mkdtemp())
    >>> (root / "site" / "pyspark").mkdir(parents=True)
    >>> _ = (root / "site" / "pyspark" / "version.py").write_text("__version__ = '4.3.0'")
    >>> with zipfile.ZipFile(root / "pyspark.zip", "w") as z:
    ...     z.writestr("pyspark/version.py", "__version__ = '4.3.0'")
    >>> path = [str(root / "pyspark.zip"), str(root / "site")]
    >>> [pathlib.Path(p).name for p in installed_first(path)]
    ['site', 'pyspark.zip']
    """
    moved = [entry for entry in path if _has_installed_twin(entry, path)]
    return [entry for entry in path if entry not in moved] + moved


def _has_installed_twin(entry: str, path: list[str]) -> bool:
    if not entry.endswith(".zip") or not os.path.isfile(entry):
        return False
    try:
        with zipfile.ZipFile(entry) as archive:
            names = set(archive.namelist())
            for version_file in VERSION_FILES:
                if version_file in names:
                    zipped = archive.read(version_file)
                    return any(
                        _read(os.path.join(other, version_file)) == zipped
                        for other in path
                        if other and not other.endswith(".zip")
                    )
    except (OSError, zipfile.BadZipFile):
        return False
    return False


def _read(file: str) -> bytes | None:
    try:
        with open(file, "rb") as handle:
            return handle.read()
    except OSError:
        return None


def registry_to_build(environ: Mapping[str, str]) -> str | None:
    """The registry a daemon with this environment builds before forking; none for the
    compile job's daemon (``COMPILE_ENV``), whose tasks compile the texts instead.

    >>> registry_to_build({PREBUILD_ENV: "/home/registry/xscl"})
    '/home/registry/xscl'
    >>> registry_to_build({PREBUILD_ENV: "/home/registry/xscl", COMPILE_ENV: "1"}) is None
    True
    """
    if environ.get(COMPILE_ENV):
        return None
    return environ.get(PREBUILD_ENV) or None


def prebuild(registry: str, spool: str | None = None) -> None:
    """Build the registry's subscriptions in this (daemon) process, for its workers, and
    warm their Stage 1 on the spool's first documents (``JobQueries.warm``)."""
    try:
        from xscl.service.worker_heap import release_free_memory, settled
        from xscl.spark_plugin.worker_context import worker

        built = worker().queries.prebuild(registry)
        if built is not None and spool:
            built.warm(first_documents(spool, WARM_DOCUMENTS))
        settled()  # the routing table and the warm-up's caches too (``worker_heap``)
        release_free_memory()  # what the build freed, before the workers fork
    except Exception as exc:  # an optimisation: each worker builds its own instead
        print(f"xscl: subscriptions not built before forking: {exc}", file=sys.stderr)


def first_documents(spool: str, count: int) -> list[Any]:
    """Up to ``count`` documents from the start of ``spool`` (none if it is not there)."""
    from xscl.connectors import SpoolReader

    if not os.path.isdir(spool):
        return []
    reader = SpoolReader(spool)
    start = reader.first_offset()
    end = min(reader.next_offset(), start + count)
    return [doc for _offset, doc in reader.iter_range(start, end)] if end > start else []


def main() -> None:
    """Settle the path, then run pyspark's daemon (it reads ``sys.argv`` as Spark gave it)."""
    sys.path[:] = installed_first(sys.path)
    registry = registry_to_build(os.environ)
    if registry:
        prebuild(registry, os.environ.get(WARM_ENV))
    from pyspark.daemon import manager

    manager()


if __name__ == "__main__":
    main()
