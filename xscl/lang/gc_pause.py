"""The cyclic garbage collector paused while many long-lived objects are made.

Parsing a large file, validating many queries and registering many subscriptions
each make millions of small objects that live on. With the collector on, its
generation scans grow with the heap: parsing a 100,000-query file took 33.8 s
instead of 17.0 s, and validating it 8.1 CPU-s instead of 1.3 (docs/benchmarks.md).
Registration also collects once at its end, so the collector's first full pass
over the new objects is paid there, not in the first documents or events
processed after it.

Where it runs: wherever queries are parsed, validated or registered (the CLI, the
driver, each executor's Python worker); nothing here is pickled.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

#: Validations and registrations of at least this many queries pause the collector.
GC_PAUSE_QUERIES = 1_000
#: Query files (XSCL or CEL) at least this long are parsed with the collector paused.
GC_PAUSE_CHARS = 100_000


@contextmanager
def gc_paused(active: bool) -> Iterator[None]:
    """Pause the cyclic garbage collector inside the block when ``active``; the
    previous state is restored.

    >>> with gc_paused(True):
    ...     gc.isenabled()
    False
    >>> gc.isenabled()
    True
    """
    was_enabled = gc.isenabled()
    if active and was_enabled:
        gc.disable()
    try:
        yield
    finally:
        if active and was_enabled:
            gc.enable()


@contextmanager
def registering(queries: int) -> Iterator[None]:
    """Register ``queries`` subscriptions inside the block: with the collector paused
    and one full collection afterwards when they are ``GC_PAUSE_QUERIES`` or more.

    Not ``gc.freeze()``: unsubscribed queries' objects form cycles to reclaim.
    """
    large = queries >= GC_PAUSE_QUERIES
    with gc_paused(large):
        yield
    if large:
        gc.collect()
