"""The durable query registry of a streaming job: subscriptions as data
(docs/architecture.md, "Spark").

A job named NAME under ``--home HOME`` keeps its subscriptions in
``HOME/registry/NAME/``, an append-only log of numbered event files written
atomically (``00000001.json``, ...), each a subscribe (the query file's text and
the ids taken from it) or an unsubscribe (ids), with the API client that wrote it
(``owner``, absent from the command line's events). A client's subscribe event also
names the client's ``namespace``: its queries' ids are kept as ``<client>~<id>``
(``service.namespaces``), so that each client has ids of its own. ``xscl subscribe`` /
``xscl unsubscribe`` append events while the job runs; the job reads the log at
the start of every micro-batch and applies the new events before that batch's
documents, so a change takes effect within one micro-batch, without a restart
and without touching the state of the other queries.

Exactly once across restarts needs every event to take effect at the same
document on replay as in the first run, so the job records, per event, the spool
offset it first took effect at (``applied/e<epoch>/00000001.json``: one folder per
epoch of the job's lease, ``pair.epochs``), before processing the batch. A restarted
job replays the spool and applies each event at its recorded offset.

Semantics (also in docs/language.md): a query subscribed to a running job matches
documents that arrive after it takes effect (``LocalEngine.add_query(...,
only_new_documents=True)``); an unsubscribed query produces nothing more. The
queries given with ``--queries`` when the log is empty become event 1 and see
every document.

Example::

    log = SubscriptionLog(home / "registry" / "xscl")
    log.subscribe(Path("more.xscl").read_text(), source="more.xscl")   # event 2
    log.unsubscribe(["crosspost"])                                      # event 3
    log.current()      # {qid: Query} after every event

Runs on the driver and in the ``xscl subscribe`` process; no Spark import.
"""

from __future__ import annotations

import dataclasses
import json
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, TypeVar

from xscl.connectors.durable import create_exclusively, write_atomically
from xscl.errors import PublishCycleError, SubscriptionError
from xscl.lang.ast import Query
from xscl.lang.normal_form import normalize
from xscl.lang.parser import iter_file_queries, parse_file
from xscl.lang.validation import validate_all
from xscl.service.namespaces import registry_id

#: Digits of an event number in its file name.
_DIGITS = 8


@dataclass(frozen=True)
class Subscription:
    """One subscribed query: its query, owner, and the subscribe event that made it
    (its history's results are under ``results/NAME/history/<event>``)."""

    query: Query
    owner: str
    event: int


@dataclass(frozen=True)
class SubscriptionEvent:
    """One event of the log."""

    version: int
    op: str  # "subscribe" | "unsubscribe"
    ids: tuple[str, ...]
    text: str
    source: str
    #: the API client that wrote the event (``xscl api``); "" from the command line
    #: and in events written before owners were recorded
    owner: str = ""
    #: whose ids the text's queries take (``service.namespaces``): the client's name
    #: for an API client's subscribe, "" (ids as written) otherwise
    namespace: str = ""
    #: how far back the queries' history reaches, in microseconds (``--history``;
    #: ``service.history``); None: the default (each query's window, capped). A subscribe
    #: event written before histories were recorded has none: 0
    history: int | None = None

    def queries(self) -> list[Query]:
        """The subscribed queries (in file order) with their registry ids; empty for an
        unsubscribe."""
        if self.op != "subscribe":
            return []
        return list(self.iter_queries())

    def iter_queries(self) -> Iterator[Query]:
        """``queries`` one at a time, parsed as they are needed (a compile task keeps only
        its part of a large event)."""
        if self.op != "subscribe":
            return iter(())
        parsed = iter_file_queries(self.text, source=self.source)
        return _in_namespace(parsed, self.namespace, set(self.ids))


class SubscriptionLog:
    """``HOME/registry/NAME``: the event files and where each took effect."""

    def __init__(self, folder: str | Path, applied: str | Path | None = None) -> None:
        self.folder = Path(folder)
        #: where ``record_applied`` writes (the job's epoch); default: the newest one
        self.applied_folder = Path(applied) if applied else _newest_applied(self.folder)
        self._cache: dict[int, SubscriptionEvent] = {}
        #: the subscriptions and their owners after event ``_upto``, brought up to date
        #: by applying only the newer events (events never change once written)
        self._upto = 0
        self._queries: dict[str, Query] = {}
        self._owners: dict[str, str] = {}
        self._subscribed_in: dict[str, int] = {}
        self._catching_up = threading.Lock()

    # ---------------------------------------------------------------- reading
    def versions(self) -> list[int]:
        """The event numbers present, ascending."""
        if not self.folder.is_dir():
            return []
        return sorted(
            int(p.stem)
            for p in self.folder.glob("*.json")
            if p.stem.isdigit() and len(p.stem) == _DIGITS
        )

    def event(self, version: int) -> SubscriptionEvent:
        cached = self._cache.get(version)
        if cached is not None:
            return cached
        path = self._event_path(version)
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            event = SubscriptionEvent(
                int(data["version"]),
                str(data["op"]),
                tuple(str(i) for i in data["ids"]),
                str(data.get("text", "")),
                str(data.get("source", "")),
                str(data.get("owner", "")),
                str(data.get("namespace", "")),
                _history(data),
            )
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise SubscriptionError.from_code("XSCL-S014", f"cannot read {path}: {exc}") from exc
        self._cache[version] = event
        return event

    def events(self, after: int = 0) -> list[SubscriptionEvent]:
        """Events with a number above ``after``, in order."""
        return [self.event(v) for v in self.versions() if v > after]

    def current(self, upto: int | None = None) -> dict[str, Query]:
        """The subscribed queries after every event (up to ``upto``), by id."""
        if upto is None:
            with self._catching_up:
                self._catch_up()
                return dict(self._queries)
        queries: dict[str, Query] = {}
        for event in self.events():
            if event.version > upto:
                break
            apply_event(queries, event, SubscriptionEvent.queries)
        return queries

    def owners(self) -> dict[str, str]:
        """The owner of each subscribed query (its subscribe event's owner), by id."""
        with self._catching_up:
            self._catch_up()
            return dict(self._owners)

    def subscription(self, qid: str) -> Subscription | None:
        """Subscribed query ``qid`` as it is now, its owner and the event that subscribed
        it (None: not subscribed); no copy of the whole set (a request's lookup)."""
        with self._catching_up:
            self._catch_up()
            query = self._queries.get(qid)
            if query is None:
                return None
            return Subscription(query, self._owners.get(qid, ""), self._subscribed_in[qid])

    def _catch_up(self) -> None:
        """Apply the events written since the last call (a writer takes number N+1 only
        once N exists, so the numbers have no gaps)."""
        for event in self.events(after=self._upto):
            apply_event(self._queries, event, SubscriptionEvent.queries)
            for qid in event.ids:
                if event.op == "subscribe":
                    self._owners[qid] = event.owner
                    self._subscribed_in[qid] = event.version
                else:
                    self._owners.pop(qid, None)
                    self._subscribed_in.pop(qid, None)
            self._upto = event.version

    # ---------------------------------------------------------------- writing
    def subscribe(
        self,
        text: str,
        *,
        source: str,
        owner: str = "",
        namespace: str = "",
        history: int | None = None,
        only: Sequence[str] | None = None,
    ) -> SubscriptionEvent:
        """Validate a query file against the current subscriptions and append it, its
        ids in ``namespace`` (a client's name; "": as written), with the queries'
        ``history`` (microseconds; None: the default, ``service.history``); ``only``:
        subscribe these ids of the file (None: all).

        Raises ``SubscriptionError`` (nothing is written) when a query is invalid,
        an id is taken, or PUBLISH would form a cycle.
        """
        good = self.check(text, source=source, namespace=namespace)
        ids = [q.qid for q in good if only is None or q.qid in only]
        return self.append("subscribe", ids, text, source, owner, namespace, history)

    def check(self, text: str, *, source: str, namespace: str = "") -> list[Query]:
        """The queries ``subscribe`` would add, with their registry ids, or its
        ``SubscriptionError``; writes nothing. Only ids of ``namespace`` can be taken."""
        parsed = parse_file(text, source=source)
        good, invalid = validate_all(list(parsed.queries), text=text)
        errors = tuple(parsed.errors) + tuple(invalid)
        if errors:
            raise SubscriptionError.from_code(
                "XSCL-S010", f"{len(errors)} invalid quer(ies) in {source}", errors=errors
            )
        current = self.current()
        taken = [q.qid for q in good if registry_id(namespace, q.qid) in current]
        good = list(_in_namespace(good, namespace))
        if taken:
            raise SubscriptionError.from_code(
                "XSCL-S011",
                f"already subscribed: {', '.join(taken)} (unsubscribe first, or label the "
                "queries with new ids: 'ID: query;')",
            )
        from xscl.engine.subscriptions import check_publish_cycles

        try:
            # only a publishing query can be on a cycle: the others are not normalised
            publishing = [q for q in [*current.values(), *good] if q.publish is not None]
            check_publish_cycles([normalize(q) for q in publishing])
        except PublishCycleError as exc:
            raise SubscriptionError.from_code("XSCL-S013", exc.message) from exc
        return good

    def unsubscribe(self, ids: Iterable[str], *, owner: str = "") -> SubscriptionEvent:
        """Append the removal of subscribed ``ids``; unknown ids raise, nothing written."""
        wanted = list(dict.fromkeys(ids))
        current = self.current()
        unknown = [i for i in wanted if i not in current]
        if unknown:
            raise SubscriptionError.from_code("XSCL-S012", f"not subscribed: {', '.join(unknown)}")
        return self.append("unsubscribe", wanted, "", "", owner)

    def append(
        self,
        op: str,
        ids: list[str],
        text: str,
        source: str,
        owner: str = "",
        namespace: str = "",
        history: int | None = None,
    ) -> SubscriptionEvent:
        """Write the next event file atomically; concurrent writers get distinct numbers."""
        self.folder.mkdir(parents=True, exist_ok=True)
        while True:
            version = (self.versions() or [0])[-1] + 1
            payload = {
                "version": version,
                "op": op,
                "ids": ids,
                "text": text,
                "source": source,
                **({"owner": owner} if owner else {}),
                **({"namespace": namespace} if namespace else {}),
                **(
                    {"history": _WINDOW if history is None else history}
                    if op == "subscribe"
                    else {}
                ),
                "at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            }
            data = json.dumps(payload, ensure_ascii=False).encode("utf-8")
            if create_exclusively(self._event_path(version), data):
                return self.event(version)
            # another writer took this number: take the next one

    # ---------------------------------------------------- where events applied
    def applied(self) -> dict[int, int]:
        """Event number -> the spool offset it first took effect at."""
        folder = self.applied_folder
        out: dict[int, int] = {}
        if folder.is_dir():
            for path in folder.glob("*.json"):
                if path.stem.isdigit():
                    out[int(path.stem)] = int(json.loads(path.read_text())["offset"])
        return out

    def record_applied(self, version: int, offset: int) -> int:
        """Record (once) that event ``version`` took effect at ``offset``; the recorded one."""
        known = self.applied().get(version)
        if known is not None:
            return known
        folder = self.applied_folder
        folder.mkdir(parents=True, exist_ok=True)
        body = json.dumps({"version": version, "offset": offset}).encode()
        write_atomically(folder / f"{version:0{_DIGITS}d}.json", body)
        return offset

    def _event_path(self, version: int) -> Path:
        return self.folder / f"{version:0{_DIGITS}d}.json"


def _in_namespace(
    queries: Iterable[Query], namespace: str, wanted: set[str] | None = None
) -> Iterator[Query]:
    """``queries`` with their ids in ``namespace`` (those in ``wanted`` when given)."""
    for query in queries:
        rid = registry_id(namespace, query.qid)
        if wanted is None or rid in wanted:
            yield dataclasses.replace(query, qid=rid) if namespace else query


#: An event's ``history`` when none was asked for: each query's default.
_WINDOW = "window"


def _history(data: dict[str, Any]) -> int | None:
    """An event file's history: microseconds, None for the default (``"window"``), 0 for a
    subscribe event written before histories were recorded (it asked for none)."""
    recorded = data.get("history", 0 if data.get("op") == "subscribe" else None)
    return None if recorded in (None, _WINDOW) else int(recorded)


def _newest_applied(folder: Path) -> Path:
    """``applied/e<newest epoch>`` when the job ran with epochs, else ``applied``."""
    applied = folder / "applied"
    epochs = sorted(applied.glob("e[0-9]*")) if applied.is_dir() else []
    return epochs[-1] if epochs else applied


class _Subscribed(Protocol):
    """What a subscription is kept as: a ``Query`` or a compiled one (``compiled.table``)."""

    @property
    def qid(self) -> str: ...


_Q = TypeVar("_Q", bound=_Subscribed)


def apply_event(
    queries: dict[str, _Q],
    event: SubscriptionEvent,
    subscribed: Callable[[SubscriptionEvent], Iterable[_Q]],
) -> None:
    """Apply one event to a ``{qid: query}`` mapping in place; a subscribe event's
    queries are ``subscribed(event)`` (``SubscriptionEvent.queries``: parsed)."""
    check_op(event)
    if event.op == "subscribe":
        for query in subscribed(event):
            queries[query.qid] = query
    else:
        for qid in event.ids:
            queries.pop(qid, None)


def check_op(event: SubscriptionEvent) -> None:
    """Raise ``XSCL-S014`` unless ``event`` subscribes or unsubscribes."""
    if event.op not in ("subscribe", "unsubscribe"):
        raise SubscriptionError.from_code(
            "XSCL-S014", f"event {event.version}: unknown op {event.op!r}"
        )


def describe(event: SubscriptionEvent) -> dict[str, Any]:
    """A JSON-able summary of an event (what ``xscl subscribe`` prints)."""
    summary: dict[str, Any] = {"version": event.version, "op": event.op, "ids": list(event.ids)}
    if event.history is not None:
        summary["history_micros"] = event.history
    return summary


def publish_readers(current: Mapping[str, Query], ids: Sequence[str]) -> str | None:
    """Why removing ``ids`` would leave readers of their PUBLISHed streams; None if it won't.

    A reader is a subscribed query, not among ``ids``, with a block on a stream
    that one of ``ids`` PUBLISHes (other publishers of that stream notwithstanding:
    the readers' input would change under them).
    """
    removing = set(ids)
    problems: list[str] = []
    readers_all: list[str] = []
    for qid in dict.fromkeys(ids):
        query = current.get(qid)
        if query is None or query.publish is None:
            continue
        stream = query.publish
        readers = sorted(
            other
            for other, q in current.items()
            if other not in removing and any(b.stream == stream for b in q.blocks)
        )
        if readers:
            problems.append(f"{qid} publishes stream {stream!r}, read by {', '.join(readers)}")
            readers_all.extend(r for r in readers if r not in readers_all)
    if not problems:
        return None
    together = " ".join([*dict.fromkeys(ids), *readers_all])
    return (
        f"{'; '.join(problems)}: unsubscribe the readers too "
        f"('xscl unsubscribe {together}'), or pass --force to leave them without that input"
    )
