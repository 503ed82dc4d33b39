"""The cyclic garbage collector paused while many long-lived objects are made.

Parsing a large file, validating many queries and registering many subscriptions
each make millions of small objects that live on. With the collector on, its
generation scans grow with the heap: parsing a 100,000-query file took 33.8 s
instead of 17.0 s, and validating it 8.1 CPU-s instead of 1.3 (docs/benchmarks.md).
Registration also collects once at its end, so the collector's first full pass
over the new objects is paid there, not in the first documents or events
processed after it; or, for a set registered in many calls (the CEL engine's
``subscribe``), freezes them (``registering_frozen``) so that no later pass
walks them at all.

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
def registering_frozen(queries: int, *, collect_first: bool = False) -> Iterator[None]:
    """Register ``queries`` subscriptions inside the block, for a holder that registers
    many times (the CEL engine: a subscription set built in chunks). When they are
    ``GC_PAUSE_QUERIES`` or more, the collector is paused inside and every object alive
    afterwards is moved to its permanent generation (``gc.freeze``), which no later
    collection scans; nothing is collected (``collect_first``: once, before freezing).

    ``registering``'s full collection after each call walks every subscription built
    before it, so a set built in chunks cost quadratic time (400k CEL subscriptions in
    chunks of 10k: 690 CPU-s, docs/benchmarks.md); a freeze costs nothing, and the
    next chunk's collections see only what is new. Reference cycles among frozen
    objects are reclaimed only after ``gc.unfreeze()``: the holder unfreezes when it
    drops subscriptions (and passes ``collect_first`` at its next freeze, so that their
    cycles are not frozen again). Registering makes no cyclic garbage of its own.

    >>> with registering_frozen(GC_PAUSE_QUERIES):
    ...     gc.isenabled()
    False
    >>> gc.get_freeze_count() > 0
    True
    >>> gc.unfreeze()
    """
    large = queries >= GC_PAUSE_QUERIES
    was_enabled = gc.isenabled()
    if large and was_enabled:
        gc.disable()
    try:
        yield
        if large:
            if collect_first:
                gc.collect()
            # before the collector is on again: its first young collection would walk
            # every new object once more
            gc.freeze()
    finally:
        if large and was_enabled:
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
