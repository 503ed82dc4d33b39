"""Where the documents of a time-placed join go (``placements.TIME``: two blocks, no value
equality between them, a finite window, as ``A JOIN {TRUE, 1h} B``).

Such a join has no value to partition by, so it is partitioned by time. A window ``w``
belongs to a **class**: the smallest power of two of microseconds that is at least
``w`` and at least ``MIN_CLASS`` (about a second). A document at ``ts`` is stored under
its class's bucket ``ts // width`` (its *home label*) and probes the buckets ``b - 1``,
``b`` and ``b + 1``: two documents within ``w`` of each other lie in the same or
neighbouring buckets. The labels are routed like string values (``routing``: a label
has a group, and a busy one is spread over salts as a hot value is), and a group's
time-placed plans scan only the documents stored under the labels the new document
probes there (``groups.value_group``).

Classes rather than windows, so that buckets never move as queries come and go: a
query's matches are found only through its own class's labels (``row_class``), a
document is stored once per class its stream's time-placed queries have, and a query
subscribed later sees only documents that arrive after it anyway.

Each result once: the older-arriving document of a pair is stored under exactly one
label of the class; the later one probes that label once, in that label's group.

>>> width = window_class(3_600_000_000)   # 1h: 2^32 microseconds, about 71 minutes
>>> width
4294967296
>>> home_label(width, 10_000_000_000), probe_labels(width, 10_000_000_000)
('@4294967296:2', ('@4294967296:1', '@4294967296:2', '@4294967296:3'))
"""

from __future__ import annotations

from xscl.templates.registry import QueryRow

#: The narrowest class: 2^20 microseconds (a window of 0, equal timestamps, included).
MIN_CLASS = 1 << 20
#: A label starts with this; a value group's values are hex digests, never with it.
LABEL_PREFIX = "@"


def window_class(window: int) -> int:
    """The bucket width of a window (microseconds): a power of two, at least ``window``.

    >>> window_class(0), window_class(MIN_CLASS + 1) == 2 * MIN_CLASS
    (1048576, True)
    """
    return max(MIN_CLASS, 1 << max(0, (window - 1).bit_length()))


def row_class(row: QueryRow) -> int:
    """The class of a time-placed query's R_T row (its one window is finite)."""
    (window,) = row.windows
    assert window is not None, "a time-placed query has a finite window"
    return window_class(window)


def home_label(width: int, ts: int) -> str:
    """The label a document at ``ts`` is stored under in class ``width``."""
    return f"{LABEL_PREFIX}{width}:{ts // width}"


def probe_labels(width: int, ts: int) -> tuple[str, str, str]:
    """The labels a document at ``ts`` probes in class ``width``."""
    bucket = ts // width
    return (
        f"{LABEL_PREFIX}{width}:{bucket - 1}",
        f"{LABEL_PREFIX}{width}:{bucket}",
        f"{LABEL_PREFIX}{width}:{bucket + 1}",
    )


def is_label(value: str) -> bool:
    """Whether a group's home or probe is a time label (else a value's digest)."""
    return value.startswith(LABEL_PREFIX)


def label_class(label: str) -> int:
    """The class a label belongs to.

    >>> label_class("@4294967296:2")
    4294967296
    """
    return int(label[len(LABEL_PREFIX) : label.index(":")])
