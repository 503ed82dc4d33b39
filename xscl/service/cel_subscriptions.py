"""The durable CEL query registry of a job: CEL subscriptions as data (docs/cel.md 10.7).

A job NAME under ``--home HOME`` keeps its CEL queries in
``HOME/registry/NAME.cel/``: the same append-only log of numbered, atomically
created event files as its XSCL registry (``service.subscriptions.SubscriptionLog``
writes and reads them: one writer per number, no duplicate ids), each a
subscribe (the CEL file's text and the ids of its accepted queries) or an
unsubscribe (ids). ``xscl cel subscribe`` / ``xscl cel unsubscribe`` append
events whether or not the job runs; ``xscl serve --cel-queries FILE`` makes
FILE event 1 of an empty registry.

Replaying the events (``live``) gives the queries and named partition classes
(``events.live_classes``) after each; it is a pure function of the events and
the XSCL catalog, so the driver and every executor agree on it. A bad query of
a subscribe is rejected with its code and changes nothing; the file's other
queries are subscribed (docs/cel.md 7).

Where each event takes effect is not kept here: the CEL source puts the
registry version into its offsets, which Spark logs before a batch runs
(``spark_plugin.cel.source``). Runs on the driver, in the ``xscl cel`` process
and (``live``, cached) on executors; no Spark import.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from xscl.errors import SubscriptionError, XsclError
from xscl.events.live_classes import SubscribedCel
from xscl.lang.cel.parser import parse_file
from xscl.service.subscriptions import SubscriptionEvent, SubscriptionLog

__all__ = ["CelSubscriptionLog", "cel_registry", "live_at"]


def cel_registry(home: Path, name: str) -> Path:
    """``HOME/registry/NAME.cel``: the CEL registry of job ``name``."""
    return home / "registry" / f"{name}.cel"


class CelSubscriptionLog:
    """A CEL registry folder and the XSCL catalog its queries are validated against."""

    def __init__(self, folder: str | Path, catalog: Mapping[str, Sequence[str]]) -> None:
        self.log = SubscriptionLog(folder)
        self.folder = self.log.folder
        self.catalog_json = json.dumps(
            {k: list(v) for k, v in sorted(catalog.items())}, separators=(",", ":")
        )

    def versions(self) -> list[int]:
        return self.log.versions()

    def events(self) -> list[SubscriptionEvent]:
        return self.log.events()

    def live(self, version: int | None = None) -> SubscribedCel:
        """The queries and classes after event ``version`` (None: the newest)."""
        versions = self.versions()
        upto = (versions[-1] if versions else 0) if version is None else version
        return live_at(str(self.folder), self.catalog_json, upto)

    def subscribe(
        self, text: str, *, source: str
    ) -> tuple[SubscriptionEvent | None, list[XsclError]]:
        """Append the valid queries of a CEL file; the event (None: no query was valid,
        nothing written) and every rejected query's error."""
        versions = self.versions()
        version = versions[-1] if versions else 0
        live = self.live(version)
        after, errors = live.subscribed(version + 1, parse_file(text, source=source), source, text)
        added = [qid for qid in after.ids() if qid not in set(live.ids())]
        if not added:
            return None, errors
        event = self.log.append("subscribe", added, text, source)
        if event.version == version + 1:
            return event, errors
        # another writer took the numbers in between: the event means what replaying
        # the log makes of it (``live_at``), checked against the events before it
        before = self.live(event.version - 1)
        _after, errors = before.subscribed(
            event.version, parse_file(text, source=source), source, text
        )
        taken = set(before.ids())
        added = [qid for qid in self.live(event.version).ids() if qid not in taken]
        return (dataclasses.replace(event, ids=tuple(added)) if added else None), errors

    def unsubscribe(self, ids: Iterable[str]) -> SubscriptionEvent:
        """Append the removal of ``ids``; ``SubscriptionError`` (``CEL-S003``, ``CEL-S004``),
        nothing written, when one cannot be removed."""
        wanted = list(dict.fromkeys(ids))
        problem = self.live().unsubscribe_problem(wanted)
        if problem is not None:
            raise problem
        return self.log.append("unsubscribe", wanted, "", "")


#: Per process: (registry folder, catalog) -> the state after each event, index = version.
_built: dict[tuple[str, str], list[SubscribedCel]] = {}


def live_at(folder: str, catalog_json: str, version: int) -> SubscribedCel:
    """The queries and classes after event ``version`` of the registry ``folder``.

    Kept per process and extended event by event (events never change once written):
    an executor builds each version once. Runs wherever it is called.
    """
    built = _built.setdefault((folder, catalog_json), [])
    if not built:
        catalog = {k: tuple(v) for k, v in json.loads(catalog_json).items()}
        built.append(SubscribedCel.empty(catalog))
    log = SubscriptionLog(folder)
    while len(built) <= version:
        built.append(_apply(built[-1], log.event(len(built)), folder))
    return built[version]


def _apply(before: SubscribedCel, event: SubscriptionEvent, folder: str) -> SubscribedCel:
    """The state after one event."""
    if event.op == "unsubscribe":
        return before.unsubscribed(i for i in event.ids if i in set(before.ids()))
    if event.op != "subscribe":
        raise SubscriptionError.from_code(
            "XSCL-S014", f"event {event.version} of {folder}: unknown op {event.op!r}"
        )
    after, _errors = before.subscribed(
        event.version, parse_file(event.text, source=event.source), event.source, event.text
    )
    wanted = set(event.ids)
    extra = [qid for qid in after.ids() if qid not in set(before.ids()) and qid not in wanted]
    return after.unsubscribed(extra) if extra else after
