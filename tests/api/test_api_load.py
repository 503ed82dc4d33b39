"""The load test's invariant, small and fast (benchmarks/api_load runs 50 clients):
10 clients subscribe, unsubscribe and page results concurrently against a real
``xscl api`` on loopback while results are committed, and afterwards the registry
holds exactly what they were told: no subscription lost, none applied twice.
Timings are not asserted."""

from __future__ import annotations

from pathlib import Path

from benchmarks.api_load.jobs import ResultsWriter
from benchmarks.api_load.load import registry_problems, run_clients
from tests.api.server import free_port, start_api
from xscl.service.api.tokens import TokenStore
from xscl.service.subscriptions import SubscriptionLog

#: More writes than the benchmark's mix, so that a few seconds hold many of each.
WRITES = {"results": 30, "list": 10, "invoke": 10, "subscribe": 30, "unsubscribe": 20}


def test_concurrent_clients_lose_nothing_and_apply_nothing_twice(tmp_path: Path) -> None:
    store = TokenStore(tmp_path)
    tokens = {f"c{n}": store.create(f"c{n}") for n in range(10)}
    port = free_port()
    server = start_api(tmp_path, port)
    writer = ResultsWriter(tmp_path, interval=0.2)
    writer.start()
    try:
        report = run_clients(
            f"http://127.0.0.1:{port}",
            tokens,
            rate=60,
            duration=3,
            max_requests=300,
            subscribes=5,
            mix=WRITES,
        )
    finally:
        writer.stop()
        server.terminate()
        server.wait()
    assert report.failures == []
    subscribed = sum(len(c.subscribed) for c in report.clients)
    unsubscribed = sum(len(c.unsubscribed) for c in report.clients)
    assert subscribed >= 20 and unsubscribed >= 5, (subscribed, unsubscribed)
    assert sum(c.results_read for c in report.clients) > 0 and writer.batches > 0
    log = SubscriptionLog(tmp_path / "registry" / "xscl")
    assert registry_problems(log, report) == []
    assert len(log.current()) == subscribed - unsubscribed
    # the check sees a subscription nobody was told of, and one applied twice
    text = "c0_extra: S//a->x FOLLOWED BY {x=y, 1h} S//b->y;"
    log.subscribe(text, source="test", owner="c0", namespace="c0")
    acked = next(c for c in report.clients if c.subscribed)
    qid = acked.subscribed[0]
    if qid not in acked.unsubscribed:
        log.unsubscribe([f"{acked.name}~{qid}"])
    log.subscribe(f"{qid}: S//a->x;", source="test", owner=acked.name, namespace=acked.name)
    found = registry_problems(SubscriptionLog(log.folder), report)
    assert "c0~c0_extra: subscribed, never acknowledged" in found
    assert f"{acked.name}~{qid}: acknowledged once, 2 subscribe events" in found
