"""Every command line the chart renders is accepted by the real parser it is meant for.

The driver's ``xscl serve`` arguments and the SparkApplication's submit.py arguments are
parsed by xscl's own parsers (and checked to carry the values they came from); the poller's
``xscl poll`` calls are recorded by running files/poll_feeds.sh with stand-ins for ``xscl``
and ``sleep``, then parsed; the subscriptions Job and the liveness check are parsed by their
scripts' parsers; the feed server's command is run and fetched from.
"""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from tests.deploy.chartkit import (
    CHART,
    NAMESPACE,
    RELEASE,
    Manifest,
    kinds,
    load_script,
    only,
    profile,
    render,
    render_profile,
)
from xscl.cli.main import build_parser as xscl_parser
from xscl.cli.serve import build_parser as submit_parser

PROFILES = ("default", "operator", "production", "pair")


def parse(parser: argparse.ArgumentParser, args: Sequence[str]) -> argparse.Namespace:
    try:
        return parser.parse_args(list(args))
    except SystemExit:
        pytest.fail(f"{parser.prog} refuses {list(args)}")


def container(obj: Manifest, index: int = 0) -> dict[str, Any]:
    found: dict[str, Any] = obj["spec"]["template"]["spec"]["containers"][index]
    return found


def job_arguments(objects: tuple[Manifest, ...]) -> argparse.Namespace:
    """The streaming job's options as xscl parses them, in either mode."""
    apps = [o for o in objects if o["kind"] == "SparkApplication"]
    if apps:
        return parse(submit_parser(), apps[0]["spec"]["arguments"])
    args = parse(xscl_parser(), container(only(objects, "StatefulSet", "-driver"))["args"])
    assert args.command == "serve"
    return args


@pytest.mark.parametrize("name", PROFILES)
def test_the_job_options_parse(name: str) -> None:
    args = job_arguments(render_profile(name))
    assert args.home == "/var/lib/xscl"
    assert args.queries == "/etc/xscl/config/queries.xscl"
    if name != "operator":
        assert args.master == "k8s://https://kubernetes.default.svc"
    else:
        assert args.master is None  # spark-submit's, from the operator


def test_each_job_value_reaches_its_option() -> None:
    args = job_arguments(render_profile("production"))
    job = profile("production")["job"]
    assert (args.name, args.trigger_seconds, args.max_records_per_batch) == (
        job["name"],
        job["triggerSeconds"],
        job["maxRecordsPerBatch"],
    )
    assert (args.allowed_lateness, args.feed_entries, args.results_format) == (
        job["allowedLateness"],
        job["feedEntries"],
        job["resultsFormat"],
    )
    assert (args.state_partitions, args.value_groups, args.hot_salts, args.hot_threshold) == (
        job["statePartitions"],
        job["valueGroups"],
        job["hotSalts"],
        job["hotThreshold"],
    )
    assert (args.join_plan, args.cache_memory) == (job["joinPlan"], job["cacheMemory"] << 20)
    assert args.quiet is True


def test_large_numbers_stay_integers() -> None:
    """YAML numbers reach templates as floats: 1000000 must not become 1e+06."""
    big = {"job": {"hotThreshold": 1_000_000, "maxRecordsPerBatch": 5_000_000}}
    args = job_arguments(tuple(render(big)))
    assert (args.hot_threshold, args.max_records_per_batch) == (1_000_000, 5_000_000)
    app = only(render({**big, "job": {**big["job"], "mode": "operator"}}), "SparkApplication")
    assert parse(submit_parser(), app["spec"]["arguments"]).hot_threshold == 1_000_000


def test_the_feed_base_url_reaches_serve_only_when_set() -> None:
    """The feeds' rel="self" through the cluster's Ingress (issue 36, defect 14)."""
    assert job_arguments(render_profile("production")).feed_base_url is None
    url = "https://feeds.example.org/xscl"
    args = job_arguments(tuple(render({"feedServer": {"baseUrl": url}})))
    assert args.feed_base_url == url


def test_the_subscriptions_job_options_parse() -> None:
    objects = render_profile("production")
    job = container(only(objects, "Job", "-subscriptions"))
    assert job["command"] == ["python", "/etc/xscl/scripts/sync_queries.py"]
    args = parse(load_script("sync_queries.py").build_parser(), job["args"])
    assert (args.home, args.name) == ("/var/lib/xscl", "news-watch")
    assert args.queries == job_arguments(objects).queries


@pytest.mark.parametrize("name", ["production", "pair"])
def test_the_probes_options_parse_and_name_the_lease_serve_takes(name: str) -> None:
    objects = render_profile(name)
    driver = container(only(objects, "StatefulSet", "-driver"))
    serve = job_arguments(objects)
    health = load_script("job_health.py").build_parser()
    live = parse(health, driver["livenessProbe"]["exec"]["command"][2:])
    ready = parse(health, driver["readinessProbe"]["exec"]["command"][2:])
    stall = profile(name).get("driver", {}).get("livenessProbe", {}).get("stallSeconds", 900)
    assert (live.readiness, live.stall_seconds, ready.readiness) == (False, stall, True)
    for probe in (live, ready):
        assert (probe.home, probe.name) == (serve.home, serve.name)
        lease = (probe.lease, probe.lease_name, probe.lease_namespace)
        assert lease == (serve.lease, serve.lease_name, serve.lease_namespace)


def test_the_pair_serves_on_the_releases_lease() -> None:
    args = job_arguments(render_profile("pair"))
    pair = profile("pair")["pair"]
    assert (args.lease, args.lease_name, args.lease_namespace) == (
        "kubernetes",
        f"{RELEASE}-xscl-lease",
        NAMESPACE,
    )
    assert (args.lease_seconds, args.renew_seconds) == (pair["leaseSeconds"], pair["renewSeconds"])
    assert job_arguments(render_profile("default")).lease == "file"  # one driver: xscl's default


@pytest.mark.parametrize("name", PROFILES)
def test_the_poller_calls_xscl_poll_per_stream_with_options_it_accepts(
    name: str, tmp_path: Path
) -> None:
    objects = render_profile(name)
    poller = container(only(objects, "Deployment", "-poller"))
    assert poller["command"][-1] == "/etc/xscl/scripts/poll_feeds.sh"
    config = only(objects, "ConfigMap", "-config")["data"]
    calls = run_poller(poller["args"], config, tmp_path)
    feeds = profile(name)["feeds"]
    assert len(calls) == len(feeds)
    for call in calls:
        args = parse(xscl_parser(), call)
        assert args.command == "poll" and args.once
        assert args.feeds == feeds[args.stream]
        assert args.spool == "/var/lib/xscl/spool"
        assert args.form == (profile(name).get("poller", {}).get("form") or "raw")


def run_poller(args: Sequence[str], config: dict[str, str], tmp: Path) -> list[list[str]]:
    """Run files/poll_feeds.sh for one pass over ``config``'s feed lists; xscl's argv."""
    feeds, bin_dir, log = tmp / "config", tmp / "bin", tmp / "calls"
    feeds.mkdir()
    bin_dir.mkdir()
    for key, text in config.items():
        (feeds / key).write_text(text)
    (feeds / "skipped.feeds").write_text("# only a comment\n\n")
    (bin_dir / "xscl").write_text(
        f'#!/bin/sh\nprintf "%s\\0" "$@" >> {log}\nprintf "\\n" >> {log}\n'
    )
    (bin_dir / "sleep").write_text("#!/bin/sh\nkill $PPID\n")  # end the loop after one pass
    for stub in bin_dir.iterdir():
        stub.chmod(0o755)
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "FEEDS_DIR": str(feeds)}
    script = CHART / "files" / "poll_feeds.sh"
    subprocess.run(["/bin/sh", str(script), *args], env=env, timeout=30, check=False)
    lines = log.read_text().split("\n") if log.exists() else []
    return [line.split("\0")[:-1] for line in lines if line]


def test_the_feed_server_command_serves_the_feeds(tmp_path: Path) -> None:
    objects = render_profile("default")
    command = container(only(objects, "Deployment", "-feeds"))["command"]
    assert command[:2] == ["/usr/bin/tini", "--"]
    argv = command[2:]
    folder = argv[argv.index("--directory") + 1]
    assert folder == "/var/lib/xscl/results/xscl/feeds"
    (tmp_path / "q1.atom").write_text("<feed xmlns='http://www.w3.org/2005/Atom'/>")
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    argv[argv.index("8080")] = str(port)
    argv[argv.index("0.0.0.0")] = "127.0.0.1"
    argv[argv.index(folder)] = str(tmp_path)
    assert argv[0] == "python"
    server = subprocess.Popen([sys.executable, *argv[1:]], stderr=subprocess.DEVNULL)
    try:
        response = _get(f"http://127.0.0.1:{port}/q1.atom")
        assert response.headers["Content-Type"] == "application/atom+xml"
        assert b"Atom" in response.read()
    finally:
        server.terminate()
        server.wait(timeout=10)


def _get(url: str) -> Any:
    deadline = time.monotonic() + 10
    while True:
        try:
            return urllib.request.urlopen(url, timeout=5)
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)


def test_the_api_runs_xscl_api_with_the_tokens_from_its_secret(tmp_path: Path) -> None:
    """api.enabled: a Deployment running `xscl api` (options parsed by xscl), a Service, and
    a Secret whose tokens.json the API reads as its token store."""
    objects = render_profile("production")
    api = container(only(objects, "Deployment", "-api"))
    assert api["command"][-2:] == ["xscl", "api"]
    args = parse(xscl_parser(), ["api", *api["args"]])
    assert (args.home, args.name, args.host) == ("/var/lib/xscl", "news-watch", "0.0.0.0")
    assert (args.max_query_bytes, args.subscribe_rate) == (32768, 1.0)
    mount = next(m for m in api["volumeMounts"] if m["name"] == "api-tokens")
    assert mount["readOnly"] and args.tokens == f"{mount['mountPath']}/tokens.json"
    assert only(objects, "Service", "-api")["spec"]["ports"][0]["port"] == 8080
    tokens = tmp_path / "tokens.json"
    tokens.write_text(only(objects, "Secret", "-api-tokens")["stringData"]["tokens.json"])
    from xscl.service.api.tokens import TokenStore

    store = TokenStore(tmp_path / "home", tokens)  # ci/production-values.yaml: alice's hash
    assert store.lookup("xscl_5o7Mnr4u_iJU8tjySan003tsyqOsnxasio0sCm42p5I").name == "alice"
    assert not [o for o in render_profile("default") if "-api" in o["metadata"]["name"]]
    existing = render({"api": {"enabled": True, "existingSecret": "my-tokens"}})
    assert "Secret" not in kinds(existing)
    volumes = only(existing, "Deployment", "-api")["spec"]["template"]["spec"]["volumes"]
    assert {"name": "api-tokens", "secret": {"secretName": "my-tokens"}} in volumes
