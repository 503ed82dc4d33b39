"""History on subscribe (PSoup §3.2, Chandrasekaran & Franklin 2003: a new query probes
the stored data): the results a query would have produced had it been subscribed
``DURATION`` earlier, split so that nothing is produced twice (docs/architecture.md,
"History on subscribe").

**The span.** A subscription takes effect at spool offset ``since`` (the offset the
job recorded for its event). Its history is the offsets ``[start, since)`` where
``start`` is the first offset whose *spool clock* (the newest ``ts`` of the records up
to and including it, as for retention and lateness) is within ``DURATION`` of the
clock just before ``since``; never below the spool's first retained offset. So "had
it been subscribed ``DURATION`` earlier" means: subscribed at offset ``start``.

**Who owns a result.** The live job is unchanged: a query subscribed at ``since``
matches only documents from ``since`` on (``Subscriptions.sees``). The history path
owns every other result of the query subscribed at ``start``: those with at least one
document before ``since`` (a join of a history document with a live one included:
the live job cannot make it, its stored documents were never evaluated against the
new query's definitions). The two sets are disjoint and their union is the query's
results from ``start`` on; result ids are the same on both paths (they depend only on
the query, the documents and the nodes), so a scan run again commits nothing twice.

**When they are final.** The first scan, over ``[start, since)``, gives every result
whose documents all lie in the history. A result joining a history document with a
later one needs the later one: a scan over ``[start, end)`` gives those up to ``end``,
and once the spool's clock has passed the history's clock plus the query's window
plus the job's allowed lateness (``closes_at``) no later document can join a history
document, so a scan from then on is final. With an INF window, or without
``--allowed-lateness``, there is no such point (``closes_at`` is None).

Runs in process here (``scan``: ``xscl run``'s engine, tests); on Spark the same span
and ownership are applied to the job's plan run once over the span
(``spark_plugin/history_scan.py``). No Spark import.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from xscl.connectors.spool import SpoolReader
from xscl.engine.output import ResultRecord
from xscl.lang.ast import Query

#: The default history of a query whose window is INF or that has one block (no
#: window of its own): seven days, cut further by the spool's retention.
DEFAULT_INF_HISTORY = 7 * 86_400 * 1_000_000


@dataclass(frozen=True)
class HistorySpan:
    """The offsets ``[start, since)`` of a subscription's history."""

    start: int
    since: int
    #: the spool's clock just before ``since`` (None: no history)
    clock: int | None

    @property
    def empty(self) -> bool:
        return self.start >= self.since


def default_history(window: int | None) -> int:
    """The history a query gets when none is asked for: its window (``cursor.query_window``:
    the sum of its operators' windows), ``DEFAULT_INF_HISTORY`` for INF or one block."""
    return DEFAULT_INF_HISTORY if window is None else window


def clock_at(reader: SpoolReader, offset: int) -> int:
    """The spool's clock at ``offset``: the newest ts of the records up to and including it."""
    ((_offset, doc),) = reader.read(offset, offset + 1)
    before = doc.newest_before
    return doc.ts_micros if before is None else max(before, doc.ts_micros)


def history_span(reader: SpoolReader, since: int, duration: int) -> HistorySpan:
    """The history of a subscription that took effect at ``since`` (see the module
    docstring). Reads O(log n) records: the clock grows with the offset."""
    first = reader.first_offset()
    since = min(since, reader.next_offset())
    if since <= first or duration <= 0:
        return HistorySpan(since, since, None)
    clock = clock_at(reader, since - 1)
    horizon = clock - duration
    low, high = first, since - 1  # the answer is in [low, high]: clock_at(since - 1) >= horizon
    while low < high:
        middle = (low + high) // 2
        if clock_at(reader, middle) >= horizon:
            high = middle
        else:
            low = middle + 1
    return HistorySpan(low, since, clock)


def closes_at(span: HistorySpan, window: int | None, lateness: int | None) -> int | None:
    """The spool clock from which a scan's history results are final; None: never (an INF
    window, or no allowed lateness). A one-block query's results are final at once."""
    if span.clock is None:
        return None
    if window is None:
        return None
    if window == 0:
        return span.clock
    if lateness is None:
        return None
    return span.clock + window + lateness


def owned_by_history(
    record: ResultRecord, offsets: Mapping[tuple[str, str], int], since: int
) -> bool:
    """Whether the history path owns ``record``: one of its spool documents lies before
    ``since`` (documents PUBLISHed inside the scan have no offset and do not decide)."""
    return any(offsets.get((stream, docid), since) < since for stream, docid, _ts in record.docs)


def owned_record(
    record: Mapping[str, Any], live: Collection[tuple[str, str]], published: Collection[str]
) -> bool:
    """Whether the history owns a result record (a JSON dict) of a scan over
    ``[start, end)``: one of its spool documents is not among ``live``, the keys of
    ``[since, end)``. Documents of a ``published`` stream (PUBLISHed inside the scan)
    have no offset and do not decide.

    >>> doc = lambda docid: {"stream": "S", "docid": docid}
    >>> owned_record({"docs": [doc("old"), doc("new")]}, {("S", "new")}, ())
    True
    >>> owned_record({"docs": [doc("new")]}, {("S", "new")}, ())
    False
    """
    return any(
        (doc["stream"], doc["docid"]) not in live
        for doc in record["docs"]
        if doc["stream"] not in published
    )


def scan(
    queries: Sequence[Query],
    reader: SpoolReader,
    span: HistorySpan,
    end: int,
    *,
    allowed_lateness: int | None = None,
) -> list[ResultRecord]:
    """The history results of ``queries`` over the spool's ``[span.start, end)`` (``end``
    at least ``span.since``), in process: the queries subscribed at ``span.start``, run
    by the in-process engine with the job's lateness read from each record, keeping the
    results the history path owns."""
    from xscl.engine.local import LocalEngine

    engine = LocalEngine(queries, allowed_lateness_micros=allowed_lateness)
    offsets: dict[tuple[str, str], int] = {}
    owned: list[ResultRecord] = []
    for offset, doc in reader.iter_range(span.start, max(end, span.since)):
        if not offsets and doc.newest_before is not None:
            engine.max_ts = doc.newest_before  # lateness as the job decides it at `start`
        offsets[doc.key] = offset
        records = engine.process_one(doc.stream, doc.docid, doc.ts_micros, doc.xml)
        owned.extend(r for r in records if owned_by_history(r, offsets, span.since))
    return owned
