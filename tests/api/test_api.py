"""The subscription API (``xscl.service.api``) through Starlette's TestClient: tokens
and isolation, subscribe/list/unsubscribe through the registry, cursor paging and
invoke over a results folder with two epochs, and bad input refused with nothing
changed."""

from __future__ import annotations

import json
import os
import re
import stat
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from xscl.cli.main import main
from xscl.results.commit import StagedPart, commit_batch, open_epoch
from xscl.results.read import read_results
from xscl.service.api.app import create_app
from xscl.service.api.limits import Limits
from xscl.service.api.openapi import openapi_document, openapi_text
from xscl.service.api.tokens import TokenStore, tokens_path
from xscl.service.subscriptions import SubscriptionLog

ROOT = Path(__file__).resolve().parents[2]
JOIN = "S//a->x FOLLOWED BY {x=y, 1h} S//b->y"
PAGE = ("/", "/page.js", "/page.css")


class Home:
    """A job's home with three clients and a client per token."""

    def __init__(self, root: Path, limits: Limits | None = None) -> None:
        self.root = root
        store = TokenStore(root)
        self.tokens = {
            "alice": store.create("alice"),
            "bob": store.create("bob"),
            "root": store.create("root", admin=True),
        }
        self.client = TestClient(create_app(root, "xscl", limits=limits))
        self.log = SubscriptionLog(root / "registry" / "xscl")

    def call(self, method: str, path: str, who: str | None = "alice", **kw: Any) -> Any:
        headers = dict(kw.pop("headers", {}))
        if who is not None:
            headers["Authorization"] = f"Bearer {self.tokens.get(who, who)}"
        return self.client.request(method, path, headers=headers, **kw)

    def subscribe(self, text: str, who: str = "alice") -> Any:
        return self.call("POST", "/subscriptions", who, content=text.encode("utf-8"))

    def registry(self) -> list[int]:
        return self.log.versions()


@pytest.fixture
def home(tmp_path: Path) -> Home:
    return Home(tmp_path)


def _refused(response: Any, status: int, code: str) -> dict[str, Any]:
    assert response.status_code == status, response.text
    body: dict[str, Any] = response.json()
    assert body["code"] == code and body["message"]
    return body


def test_tokens_keep_only_hashes_in_a_private_file(tmp_path: Path) -> None:
    token = TokenStore(tmp_path).create("carol", admin=True)
    path = tokens_path(tmp_path)
    assert token not in path.read_text() and stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert TokenStore(tmp_path).lookup(token).admin
    assert main(["api", "token", "create", "dave", "--home", str(tmp_path)]) == 0
    assert main(["api", "token", "create", "dave", "--home", str(tmp_path)]) == 2
    assert main(["api", "token", "create", "../x", "--home", str(tmp_path)]) == 2
    assert set(json.loads(path.read_text())) == {"carol", "dave"}
    secret = tmp_path / "mounted" / "tokens.json"  # xscl api --tokens FILE (a Secret)
    assert main(["api", "token", "create", "erin", "--tokens", str(secret)]) == 0
    assert set(json.loads(secret.read_text())) == {"erin"}
    frank = TokenStore(tmp_path / "elsewhere", secret).create("frank")
    client = TestClient(create_app(tmp_path / "home", tokens=secret))
    assert client.get("/subscriptions", headers={"Authorization": f"Bearer {frank}"}).json() == {
        "subscriptions": []
    }
    assert (
        client.get("/subscriptions", headers={"Authorization": f"Bearer {token}"}).status_code
        == 401
    )


def test_a_client_sees_and_changes_only_its_own_subscriptions(home: Home) -> None:
    created = home.subscribe(f"A1: {JOIN}; A2: {JOIN};")
    assert created.status_code == 201 and created.json()["ids"] == ["A1", "A2"]
    assert home.subscribe(f"B1: {JOIN};", "bob").status_code == 201
    event = json.loads((home.log.folder / "00000001.json").read_text())
    assert (event["owner"], event["namespace"]) == ("alice", "alice")
    listed = home.call("GET", "/subscriptions").json()["subscriptions"]
    assert [s["id"] for s in listed] == ["A1", "A2"]
    assert listed[0]["text"] == "A1: S//a->x\n    FOLLOWED BY {x=y, 1h} S//b->y"
    everything = home.call("GET", "/subscriptions", "root").json()["subscriptions"]
    assert [s["id"] for s in everything] == ["alice~A1", "alice~A2", "bob~B1"]
    before = home.registry()
    for method, path in (
        ("DELETE", "/subscriptions/A1"),
        ("GET", "/subscriptions/A1/results"),
        ("GET", "/subscriptions/A1/invoke"),
        ("GET", "/subscriptions/A1/feed.atom"),
        ("DELETE", "/subscriptions/nobody"),
    ):
        _refused(home.call(method, path, "bob"), 404, "XSCL-A002")  # 404, not 403
    assert home.registry() == before
    assert home.call("DELETE", "/subscriptions/A1").json()["ids"] == ["A1"]
    _refused(home.call("DELETE", "/subscriptions/B1", "root"), 404, "XSCL-A002")
    assert home.call("DELETE", "/subscriptions/bob~B1", "root").json()["ids"] == ["bob~B1"]
    assert sorted(home.log.current()) == ["alice~A2"]


def test_two_clients_may_use_one_id_and_neither_learns_of_the_other(home: Home) -> None:
    """Ids per client (service.namespaces): alice's and bob's W1 are two subscriptions,
    each listed, paged, invoked and removed by its own client only; the admin sees both
    with their owners and names them by registry id."""
    assert home.subscribe(f"W1: {JOIN};").json()["ids"] == ["W1"]
    assert home.subscribe(f"W1: {JOIN}; W2: {JOIN};", "bob").json()["ids"] == ["W1", "W2"]
    assert sorted(home.log.current()) == ["alice~W1", "bob~W1", "bob~W2"]
    assert sorted(home.log.owners().items()) == [
        ("alice~W1", "alice"),
        ("bob~W1", "bob"),
        ("bob~W2", "bob"),
    ]
    for who, ids in (("alice", ["W1"]), ("bob", ["W1", "W2"])):
        listed = home.call("GET", "/subscriptions", who).json()["subscriptions"]
        assert [(s["id"], s["owner"]) for s in listed] == [(i, who) for i in ids]
        assert all(who not in s["text"] and "~" not in s["text"] for s in listed)
    admin = home.call("GET", "/subscriptions", "root").json()["subscriptions"]
    assert [(s["id"], s["owner"]) for s in admin] == [
        ("alice~W1", "alice"),
        ("bob~W1", "bob"),
        ("bob~W2", "bob"),
    ]
    root = home.root / "results" / "xscl"
    first = open_epoch(root, 1, -1)
    _commit(
        first,
        0,
        [
            {"query": q, "result_id": q, "docs": [{"stream": "S", "docid": "d", "ts": _ts(60)}]}
            for q in ("alice~W1", "bob~W1")
        ],
    )
    for who in ("alice", "bob"):
        page = home.call("GET", "/subscriptions/W1/results", who).json()["results"]
        assert [(r["query"], r["result_id"]) for r in page] == [("W1", f"{who}~W1")]
        invoked = home.call("GET", "/subscriptions/W1/invoke", who).json()["results"]
        assert [r["result_id"] for r in invoked] == [f"{who}~W1"]
    alice_cursor = home.call("GET", "/subscriptions/W1/results", "alice").json()["cursor"]
    _refused(
        home.call("GET", f"/subscriptions/W1/results?after={alice_cursor}", "bob"),
        400,
        "XSCL-A010",
    )
    for method, path in (("GET", "/subscriptions/W2/results"), ("DELETE", "/subscriptions/W2")):
        _refused(home.call(method, path, "alice"), 404, "XSCL-A002")  # bob's W2: unknown
    _refused(home.call("GET", "/subscriptions/bob~W1/results", "alice"), 404, "XSCL-A002")
    assert home.call("DELETE", "/subscriptions/W1", "alice").json()["ids"] == ["W1"]
    assert sorted(home.log.current()) == ["bob~W1", "bob~W2"]
    assert [s["id"] for s in home.call("GET", "/subscriptions", "bob").json()["subscriptions"]] == [
        "W1",
        "W2",
    ]
    page = home.call("GET", "/subscriptions/bob~W1/results", "root").json()["results"]
    assert [(r["query"], r["result_id"]) for r in page] == [("bob~W1", "bob~W1")]
    assert home.subscribe(f"W1: {JOIN};", "root").json()["ids"] == ["W1"]  # as the CLI
    assert sorted(home.log.current()) == ["W1", "bob~W1", "bob~W2"]
    assert home.call("DELETE", "/subscriptions/bob~W2", "root").json()["ids"] == ["bob~W2"]
    assert sorted(home.log.current()) == ["W1", "bob~W1"]
    queries = {q.qid for e in home.log.events() for q in e.queries()}  # what the job runs
    assert queries == {"alice~W1", "bob~W1", "bob~W2", "W1"}


def test_requests_without_a_valid_token_get_401(home: Home) -> None:
    forged = "xscl_" + "A" * 43
    for who in (None, forged, "not-a-token", ""):
        response = home.call("GET", "/subscriptions", who)
        _refused(response, 401, "XSCL-A001")
        assert response.headers["www-authenticate"] == "Bearer"
    _refused(home.call("POST", "/subscriptions", forged, content=b"x"), 401, "XSCL-A001")
    assert home.registry() == []
    assert home.call("GET", "/health", None).json()["status"] == "ok"


def test_a_bad_query_is_refused_at_its_line_and_column(home: Home) -> None:
    body = _refused(home.subscribe(f"G1: {JOIN};\nB1: S//a->x FOLL"), 422, "XSCL-S010")
    assert (body["line"], body["column"]) == (2, 13)
    assert body["errors"][0]["code"] == "XSCL-P003"
    assert home.registry() == []
    assert home.subscribe(f"T1: {JOIN};").status_code == 201
    _refused(home.subscribe(f"T1: {JOIN};"), 409, "XSCL-S011")  # its own id only
    assert home.registry() == [1]


def test_bad_input_gets_a_coded_4xx_and_changes_nothing(tmp_path: Path) -> None:
    home = Home(tmp_path, Limits(max_queries=3))
    assert home.subscribe(f"Q1: {JOIN};").status_code == 201
    before = home.registry()
    huge = f"Q9: {JOIN};" + " " * (10 * 1024 * 1024)
    _refused(home.subscribe(huge), 413, "XSCL-A003")
    many = "".join(f"M{i}: {JOIN};\n" for i in range(4))
    _refused(home.subscribe(many), 413, "XSCL-A005")
    post = "/subscriptions"
    json_type = {"Content-Type": "application/json"}
    for body in (b'{"text": ', b"[1]", b'{"text": 3}'):
        _refused(home.call("POST", post, content=body, headers=json_type), 400, "XSCL-A004")
    _refused(home.call("POST", post, content=b"Q2: S//\xff->x;"), 400, "XSCL-A004")
    for path in ("/subscriptions/..%2F..%2Fetc/results", "/subscriptions/../Q1"):
        _refused(home.call("GET", path), 404, "XSCL-A009")
    _refused(home.call("PUT", "/subscriptions/Q1"), 405, "XSCL-A009")
    _refused(home.call("DELETE", "/subscriptions/..Q1"), 404, "XSCL-A002")
    _refused(home.call("GET", "/subscriptions/Q1/results?limit=0"), 400, "XSCL-A006")
    _refused(home.call("GET", "/subscriptions/Q1/results?after=junk"), 400, "XSCL-A010")
    assert home.registry() == before
    assert home.call(
        "POST", post, content=json.dumps({"text": f"J1: {JOIN};"}), headers=json_type
    ).json()["ids"] == ["J1"]


def test_subscribe_is_rate_limited_per_client(tmp_path: Path) -> None:
    home = Home(tmp_path, Limits(subscribe_rate=0.001, subscribe_burst=2))
    assert [home.subscribe(f"R{i}: {JOIN};").status_code for i in range(2)] == [201, 201]
    _refused(home.subscribe(f"R2: {JOIN};"), 429, "XSCL-A007")
    assert home.subscribe(f"S1: {JOIN};", "bob").status_code == 201
    assert sorted(home.log.current()) == ["alice~R0", "alice~R1", "bob~S1"]
    metrics = home.call("GET", "/metrics", None).text
    assert "xscl_api_rate_limited_total 1" in metrics
    assert 'xscl_api_requests_total{route="/subscriptions",status="429"} 1' in metrics
    assert "xscl_api_subscribed_queries_total 3" in metrics


def _ts(seconds_ago: float) -> str:
    moment = datetime.fromtimestamp(time.time() - seconds_ago, tz=timezone.utc)
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def _commit(folder: Path, batch: int, rows: list[dict[str, Any]]) -> None:
    staged = folder / f"staged-{batch}.jsonl"
    staged.write_text("".join(json.dumps(r) + "\n" for r in rows))
    commit_batch(folder, f"{batch:020d}", [StagedPart(0, str(staged), len(rows))])


def _results(home: Home) -> Path:
    """Two epochs of results of P1 and Q1 (epoch 2 replays batch 1)."""
    root = home.root / "results" / "xscl"

    def rows(batch: int) -> list[dict[str, Any]]:
        return [
            {
                "query": "alice~P1" if i % 2 else "alice~Q1",
                "result_id": f"{batch}-{i}",
                "docs": [{"stream": "S", "docid": "d", "ts": _ts(7200 if i < 2 else 60)}],
            }
            for i in range(5)
        ]

    first = open_epoch(root, 1, -1)
    for batch in range(3):
        _commit(first, batch, rows(batch))
    second = open_epoch(root, 2, 0)
    for batch in (1, 2, 3):
        _commit(second, batch, rows(batch)[::-1])
    return root


def test_results_by_cursor_and_invoke(home: Home) -> None:
    assert home.subscribe(f"P1: {JOIN}; Q1: {JOIN};").status_code == 201
    root = _results(home)
    got: list[str] = []
    after = ""
    while True:
        query = f"?limit=2&after={after}" if after else "?limit=2"
        page = home.call("GET", f"/subscriptions/Q1/results{query}").json()
        if not page["results"]:
            break
        got += [r["result_id"] for r in page["results"]]
        after = page["cursor"]
    assert got == [r["result_id"] for r in read_results(root) if r["query"] == "alice~Q1"]
    assert len(got) == 4 * 3
    foreign = home.call("GET", "/subscriptions/P1/results?limit=1").json()["cursor"]
    _refused(home.call("GET", f"/subscriptions/Q1/results?after={foreign}"), 400, "XSCL-A010")
    invoked = home.call("GET", "/subscriptions/Q1/invoke").json()
    assert invoked["window_us"] == 3600 * 10**6
    assert sorted(r["result_id"] for r in invoked["results"]) == sorted(
        f"{b}-{i}" for b in range(4) for i in (2, 4)
    )  # the results whose documents are a minute old, not two hours


def test_feed_health_metrics_and_the_openapi_document(home: Home) -> None:
    assert home.subscribe(f"F1: {JOIN};").status_code == 201
    _refused(home.call("GET", "/subscriptions/F1/feed.atom"), 404, "XSCL-A002")
    feeds = home.root / "results" / "xscl" / "feeds"
    feeds.mkdir(parents=True)
    (feeds / "alice~F1.atom").write_text("<feed xmlns='http://www.w3.org/2005/Atom'/>")
    feed = home.call("GET", "/subscriptions/F1/feed.atom")
    assert feed.status_code == 200 and feed.headers["content-type"].startswith(
        "application/atom+xml"
    )
    assert home.call("GET", "/health", None).json()["registry_version"] == 1
    metrics = home.call("GET", "/metrics", None)
    assert metrics.headers["content-type"].startswith("text/plain; version=0.0.4")
    assert 'xscl_api_requests_total{route="/subscriptions/{qid}/feed.atom",status="200"} 1' in (
        metrics.text
    )
    served = home.call("GET", "/openapi.json", None).json()
    assert json.dumps(served, indent=2, sort_keys=True) + "\n" == openapi_text()
    assert (ROOT / "docs" / "openapi.json").read_text() == openapi_text(), (
        "docs/openapi.json is out of date: python -m xscl.service.api.openapi > docs/openapi.json"
    )
    paths = set(served["paths"])
    routes = {r.path for r in home.client.app.routes} - {"/openapi.json", *PAGE}  # type: ignore[attr-defined]
    assert paths == routes


def test_concurrent_subscribes_of_one_id_apply_it_once(tmp_path: Path) -> None:
    home = Home(tmp_path, Limits(subscribe_burst=100))
    with ThreadPoolExecutor(8) as pool:
        statuses = list(pool.map(lambda _: home.subscribe(f"C1: {JOIN};").status_code, range(8)))
    assert sorted(statuses) == [201] + [409] * 7
    assert home.registry() == [1] and list(home.log.current()) == ["alice~C1"]


def test_a_query_whose_published_stream_others_read_stays(home: Home) -> None:
    text = f"P1: {JOIN} PUBLISH pub;\nR1: pub/result[./a->r] FOLLOWED BY {{r = z, 1h}} S//c->z;"
    assert home.subscribe(text).status_code == 201
    _refused(home.call("DELETE", "/subscriptions/P1"), 409, "XSCL-S017")
    assert sorted(home.log.current()) == ["alice~P1", "alice~R1"]
    assert home.call("DELETE", "/subscriptions/R1").status_code == 200
    assert home.call("DELETE", "/subscriptions/P1").status_code == 200
    # another client's reader keeps it too, and is not named to this client
    assert home.subscribe(f"P1: {JOIN} PUBLISH pub;").status_code == 201
    reader = "BR: pub/result[./a->r] FOLLOWED BY {r = z, 1h} S//c->z;"
    assert home.subscribe(reader, "bob").status_code == 201
    body = _refused(home.call("DELETE", "/subscriptions/P1"), 409, "XSCL-S017")
    assert "bob" not in body["message"] and "BR" not in body["message"]
    admin = _refused(home.call("DELETE", "/subscriptions/alice~P1", "root"), 409, "XSCL-S017")
    assert "bob~BR" in admin["message"]


def test_check_answers_as_subscribe_would_and_changes_nothing(home: Home) -> None:
    def check(text: str, who: str = "alice") -> Any:
        return home.call("POST", "/check", who, content=text.encode("utf-8"))

    assert check(f"K1: {JOIN}; K2: {JOIN};").json() == {"ids": ["K1", "K2"], "warnings": []}
    body = _refused(check("K1: S//a->x\n  FOLLOWED BY {x=y, 1h} S//b->"), 422, "XSCL-S010")
    assert (body["line"], body["errors"][0]["line"]) == (2, 2)
    assert home.registry() == []
    assert home.subscribe(f"K1: {JOIN};").status_code == 201
    _refused(check(f"K1: {JOIN};"), 409, "XSCL-S011")
    assert check(f"K1: {JOIN};", "bob").json()["ids"] == ["K1"]  # bob's own K1
    # a join that grows without bound is accepted and said, under the client's own id
    unbounded = check("K9: S//a->x JOIN {TRUE, INF} S//b->y;").json()
    assert unbounded["ids"] == ["K9"]
    (warning,) = unbounded["warnings"]
    assert warning.startswith("K9 (line 1, column 13): JOIN {TRUE, INF}"), warning
    _refused(check(f"K3: {JOIN};", None), 401, "XSCL-A001")
    assert home.registry() == [1]
    made = home.subscribe("K9: S//a->x JOIN {TRUE, INF} S//b->y;")
    assert made.status_code == 201 and made.json()["warnings"] == [warning]


def test_the_page_is_served_without_data_and_calls_only_the_api(home: Home) -> None:
    """The page's files (no browser here: what a browser gets, and that the script uses
    only endpoints of the OpenAPI document and sets server text as text)."""
    for path in PAGE:
        response = home.call("GET", path, None)
        assert response.status_code == 200
        assert response.headers["content-security-policy"].startswith("default-src 'self'")
    page = home.call("GET", "/", None).text
    assert '<script src="page.js" defer></script>' in page and "<script>" not in page
    script = home.call("GET", "/page.js", None).text
    assert "innerHTML" not in script
    called = set(re.findall(r'call\("(?:GET|POST|DELETE)", "([a-z]+)', script))
    assert called == {"subscriptions", "check"}
    assert {f"/{name}" for name in called} <= set(openapi_document()["paths"])
