"""Concurrent clients of ``xscl api`` on loopback, and the registry check after them.

``run_clients`` runs ``clients`` asyncio tasks (one token each) for at most
``duration`` seconds (no request starts later) and ``max_requests`` requests in all,
paced together at ``rate`` requests/s. Each request is drawn from a mix (``MIX``):
page the results of one of its subscriptions by cursor, list, invoke, subscribe a
new id (at most ``subscribes`` per client), unsubscribe one of its own. Every
answer's latency is kept per endpoint, and what the API acknowledged (201/200) is
kept per client.

``registry_problems`` compares the acknowledgements with the job's registry: each
acknowledged subscribe is exactly one subscribe event of the registry and is
current unless its unsubscribe was acknowledged; each acknowledged unsubscribe is
exactly one event; nothing else of the clients' is in the registry. A request that got
no answer (a timeout, counted as a failure) may have taken effect or not, but not twice.

Used by ``run.py`` (50 clients beside a running job) and ``tests/api/test_api_load.py``
(10 clients, a few seconds).
"""

from __future__ import annotations

import asyncio
import math
import random
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field

import httpx

from xscl.service.namespaces import registry_id
from xscl.service.subscriptions import SubscriptionLog

#: A client's subscription: a vendor advisory followed by news of its CVE (it matches
#: the documents the job is fed, examples/rss).
QUERY = (
    "vendor/item[contains(./title, 'Advisory')][./category->cve]"
    " FOLLOWED BY {cve = term, 3d} news/entry[./category/@term->term]"
)
#: The request mix (weights), reads first.
MIX = {"results": 45, "list": 20, "invoke": 20, "subscribe": 10, "unsubscribe": 5}
#: Endpoint labels as the table shows them.
ENDPOINT = {
    "results": "GET /subscriptions/{id}/results",
    "list": "GET /subscriptions",
    "invoke": "GET /subscriptions/{id}/invoke",
    "subscribe": "POST /subscriptions",
    "unsubscribe": "DELETE /subscriptions/{id}",
}
READS = ("results", "list", "invoke")


@dataclass
class ClientLog:
    """What one client was told."""

    name: str
    subscribed: list[str] = field(default_factory=list)  # acknowledged, local ids
    unsubscribed: list[str] = field(default_factory=list)  # acknowledged
    #: ids whose subscribe or unsubscribe got no answer (a timeout): either outcome
    uncertain: set[str] = field(default_factory=set)
    cursors: dict[str, str | None] = field(default_factory=dict)  # its live ids
    results_read: int = 0


@dataclass
class LoadReport:
    """Latencies (seconds) per endpoint, statuses, and the clients' logs."""

    latencies: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    statuses: Counter[tuple[str, int]] = field(default_factory=Counter)
    failures: list[str] = field(default_factory=list)  # transport errors, 5xx
    clients: list[ClientLog] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def requests(self) -> int:
        return sum(len(v) for v in self.latencies.values())


def percentile(values: list[float], fraction: float) -> float:
    """The nearest-rank percentile of ``values`` (not empty).

    >>> percentile([1.0, 2.0, 3.0, 4.0], 0.5), percentile([1.0, 2.0, 3.0, 4.0], 0.99)
    (2.0, 4.0)
    """
    ordered = sorted(values)
    rank = min(len(ordered), max(1, math.ceil(fraction * len(ordered))))
    return ordered[rank - 1]


async def _one(
    http: httpx.AsyncClient, log: ClientLog, op: str, serial: int, report: LoadReport
) -> None:
    """One request of kind ``op`` for client ``log``; what it was told is recorded."""
    live = sorted(log.cursors)
    if op in ("results", "invoke", "unsubscribe") and not live:
        op = "list"
    qid = random.choice(live) if live else ""
    started = time.perf_counter()
    try:
        if op == "results":
            after = log.cursors.get(qid)
            params = {"limit": "20", **({"after": after} if after else {})}
            answer = await http.get(f"/subscriptions/{qid}/results", params=params)
        elif op == "invoke":
            answer = await http.get(f"/subscriptions/{qid}/invoke")
        elif op == "list":
            answer = await http.get("/subscriptions")
        elif op == "subscribe":
            qid = f"{log.name}_{serial}"
            answer = await http.post("/subscriptions", content=f"{qid}: {QUERY};")
        else:
            answer = await http.delete(f"/subscriptions/{qid}")
    except httpx.HTTPError as exc:
        report.failures.append(f"{log.name} {op}: {type(exc).__name__}: {exc}")
        if op in ("subscribe", "unsubscribe"):
            log.uncertain.add(qid)
            log.cursors.pop(qid, None)
        return
    report.latencies[op].append(time.perf_counter() - started)
    report.statuses[(op, answer.status_code)] += 1
    if answer.status_code >= 500:
        report.failures.append(f"{log.name} {op}: {answer.status_code} {answer.text[:200]}")
        return
    if op == "subscribe" and answer.status_code == 201:
        log.subscribed.append(qid)
        log.cursors[qid] = None
    elif op == "unsubscribe" and answer.status_code == 200:
        log.unsubscribed.append(qid)
        log.cursors.pop(qid, None)
    elif op == "results" and answer.status_code == 200 and qid in log.cursors:
        page = answer.json()
        log.results_read += len(page["results"])
        log.cursors[qid] = page["cursor"]


async def _client(
    base: str,
    log: ClientLog,
    token: str,
    pace: _Pace,
    subscribes: int,
    report: LoadReport,
    seed: int,
    mix: dict[str, int],
    warm: _Barrier,
) -> None:
    chooser = random.Random(seed)
    kinds, weights = list(mix), list(mix.values())
    headers = {"Authorization": f"Bearer {token}"}
    async with httpx.AsyncClient(base_url=base, headers=headers, timeout=30) as http:
        await http.get("/subscriptions")  # warm-up, not measured: the connection opened
        await warm.wait()
        serial = 0
        while await pace.next() is not None:
            op = chooser.choices(kinds, weights)[0]
            if op == "subscribe":
                if serial >= subscribes:
                    op = chooser.choice(READS)
                else:
                    serial += 1
            await _one(http, log, op, serial, report)


class _Barrier:
    """Releases the clients together once all are warm, and starts the pace then."""

    def __init__(self, parties: int, pace: _Pace) -> None:
        self.waiting = parties
        self.pace = pace
        self.released = asyncio.Event()

    async def wait(self) -> None:
        self.waiting -= 1
        if self.waiting == 0:
            self.pace.restart()
            self.released.set()
        await self.released.wait()


class _Pace:
    """Hands out request slots at ``rate`` per second, ``total`` at most, until the end."""

    def __init__(self, rate: float, total: int, duration: float) -> None:
        self.interval = 1.0 / rate
        self.left = total
        self.duration = duration
        self.restart()
        self.issued = 0

    def restart(self) -> None:
        self.start = time.perf_counter()
        self.end = self.start + self.duration

    async def next(self) -> int | None:
        if self.left <= 0:
            return None
        due = self.start + self.issued * self.interval
        self.issued += 1
        self.left -= 1
        now = time.perf_counter()
        if due >= self.end or now >= self.end:  # behind schedule: the end still holds
            return None
        wait = due - now
        if wait > 0:
            await asyncio.sleep(wait)
        return self.issued


async def _run(
    base: str,
    tokens: dict[str, str],
    rate: float,
    duration: float,
    max_requests: int,
    subscribes: int,
    mix: dict[str, int],
) -> LoadReport:
    report = LoadReport()
    pace = _Pace(rate, max_requests, duration)
    report.clients = [ClientLog(name) for name in tokens]
    warm = _Barrier(len(report.clients), pace)
    tasks = [
        _client(base, log, tokens[log.name], pace, subscribes, report, seed, mix, warm)
        for seed, log in enumerate(report.clients)
    ]
    await asyncio.gather(*tasks)
    report.seconds = time.perf_counter() - pace.start
    return report


def run_clients(
    base: str,
    tokens: dict[str, str],
    *,
    rate: float,
    duration: float,
    max_requests: int,
    subscribes: int,
    mix: dict[str, int] = MIX,
) -> LoadReport:
    """Run one task per client of ``tokens`` against the API at ``base``."""
    return asyncio.run(_run(base, tokens, rate, duration, max_requests, subscribes, mix))


def registry_problems(log: SubscriptionLog, report: LoadReport) -> list[str]:
    """How the registry disagrees with what the clients were told (empty: it agrees)."""
    problems: list[str] = []
    subscribes: Counter[str] = Counter()
    unsubscribes: Counter[str] = Counter()
    for event in log.events():
        (subscribes if event.op == "subscribe" else unsubscribes).update(event.ids)
    current = set(log.current())
    clients = {c.name for c in report.clients}
    expected: set[str] = set()
    uncertain: set[str] = set()
    for client in report.clients:
        for qid in client.uncertain:
            rid = registry_id(client.name, qid)
            uncertain.add(rid)
            if subscribes[rid] > 1 or unsubscribes[rid] > 1:
                problems.append(f"{rid}: unanswered, applied more than once")
        acked = [registry_id(client.name, q) for q in client.subscribed]
        gone = {registry_id(client.name, q) for q in client.unsubscribed}
        for rid in acked:
            if subscribes[rid] != 1:
                problems.append(f"{rid}: acknowledged once, {subscribes[rid]} subscribe events")
        for rid in gone:
            if unsubscribes[rid] != 1:
                problems.append(f"{rid}: acknowledged once, {unsubscribes[rid]} unsubscribes")
        expected.update(set(acked) - gone)
    theirs = {rid for rid in current if "~" in rid and rid.split("~", 1)[0] in clients}
    expected -= uncertain
    theirs -= uncertain
    problems += [f"{rid}: acknowledged, not subscribed" for rid in sorted(expected - theirs)]
    problems += [f"{rid}: subscribed, never acknowledged" for rid in sorted(theirs - expected)]
    return problems


def wait_applied(log: SubscriptionLog, timeout: float) -> tuple[int, int]:
    """Wait until the job has recorded where every event took effect; (applied, events)."""
    deadline = time.monotonic() + timeout
    while True:
        versions = log.versions()
        applied = SubscriptionLog(log.folder).applied()  # the newest epoch's folder
        done = sum(1 for v in versions if v in applied)
        if done == len(versions) or time.monotonic() > deadline:
            return done, len(versions)
        time.sleep(0.5)
