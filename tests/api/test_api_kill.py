"""kill -9 of a real ``xscl api`` server (uvicorn on loopback) while clients subscribe:
every acknowledged subscription is in the registry, and the registry is readable."""

from __future__ import annotations

import os
import signal
import threading
import time
from pathlib import Path

import httpx

from tests.api.server import free_port, start_api
from xscl.service.api.tokens import TokenStore
from xscl.service.subscriptions import SubscriptionLog

JOIN = "S//a->x FOLLOWED BY {x=y, 1h} S//b->y"


def test_kill_9_mid_requests_loses_nothing_acknowledged(tmp_path: Path) -> None:
    token = TokenStore(tmp_path).create("alice")
    port = free_port()
    server = start_api(tmp_path, port)
    acknowledged: list[str] = []
    refused: list[str] = []
    stop = threading.Event()

    def client(worker: int) -> None:
        headers = {"Authorization": f"Bearer {token}"}
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=5) as http:
            for n in range(10_000):
                if stop.is_set():
                    return
                try:
                    answer = http.post(
                        "/subscriptions", content=f"K{worker}_{n}: {JOIN};", headers=headers
                    )
                except httpx.HTTPError:
                    return  # the server is gone mid-request: not acknowledged
                if answer.status_code != 201:
                    refused.append(answer.text)
                    return
                acknowledged.extend(answer.json()["ids"])

    workers = [threading.Thread(target=client, args=(w,)) for w in range(4)]
    for worker in workers:
        worker.start()
    deadline = time.monotonic() + 20
    while len(acknowledged) < 40 and not refused and time.monotonic() < deadline:
        time.sleep(0.01)
    os.kill(server.pid, signal.SIGKILL)
    server.wait()
    stop.set()
    for worker in workers:
        worker.join()
    assert not refused and len(acknowledged) >= 40
    log = SubscriptionLog(tmp_path / "registry" / "xscl")
    subscribed = [qid for event in log.events() for qid in event.ids]
    assert len(subscribed) == len(set(subscribed))  # none applied twice
    assert {f"alice~{qid}" for qid in acknowledged} <= set(subscribed)  # none lost
    assert len(subscribed) - len(acknowledged) <= 4  # at most one in flight per client
    assert set(log.current()) == set(subscribed)
