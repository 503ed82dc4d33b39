"""The registry's per-client namespaces (``service.namespaces``) and its incremental
view: a client's ids are ``<client>~<id>`` for the job, taken only within the client's
namespace; a log instance sees events another process wrote since it last looked."""

from __future__ import annotations

from pathlib import Path

import pytest

from xscl.cli.main import main
from xscl.errors import SubscriptionError
from xscl.service.subscriptions import SubscriptionLog

JOIN = "S//a->x FOLLOWED BY {x=y, 1h} S//b->y"


def test_ids_are_per_namespace_and_the_job_sees_registry_ids(tmp_path: Path) -> None:
    log = SubscriptionLog(tmp_path / "reg")
    alice = log.subscribe(f"W1: {JOIN};", source="a", owner="alice", namespace="alice")
    bob = log.subscribe(f"W1: {JOIN};", source="b", owner="bob", namespace="bob")
    cli = log.subscribe(f"W1: {JOIN};", source="cli.xscl")  # the command line: as written
    assert (alice.ids, bob.ids, cli.ids) == (("alice~W1",), ("bob~W1",), ("W1",))
    assert [q.qid for q in alice.queries()] == ["alice~W1"]  # what the job compiles
    assert sorted(log.current()) == ["W1", "alice~W1", "bob~W1"]
    assert log.owners() == {"alice~W1": "alice", "bob~W1": "bob", "W1": ""}
    with pytest.raises(SubscriptionError) as taken:
        log.check(f"W1: {JOIN}; W2: {JOIN};", source="a", namespace="alice")
    assert taken.value.code == "XSCL-S011" and "already subscribed: W1 " in taken.value.message
    assert [q.qid for q in log.check(f"W1: {JOIN};", source="c", namespace="carol")] == ["carol~W1"]
    log.unsubscribe(["alice~W1"], owner="alice")
    assert sorted(log.current()) == ["W1", "bob~W1"]
    assert sorted(log.current(upto=3)) == ["W1", "alice~W1", "bob~W1"]


def test_a_log_catches_up_with_events_written_elsewhere(tmp_path: Path) -> None:
    reader, writer = SubscriptionLog(tmp_path / "reg"), SubscriptionLog(tmp_path / "reg")
    assert reader.current() == {} and reader.owners() == {}
    writer.subscribe(f"A1: {JOIN}; A2: {JOIN};", source="a", owner="alice", namespace="alice")
    assert sorted(reader.current()) == ["alice~A1", "alice~A2"]
    writer.unsubscribe(["alice~A1"])
    writer.subscribe(f"B1: {JOIN};", source="b", owner="bob", namespace="bob")
    assert sorted(reader.current()) == ["alice~A2", "bob~B1"]
    assert reader.owners() == {"alice~A2": "alice", "bob~B1": "bob"}
    returned = reader.current()
    returned.clear()  # a copy: the view is not changed through it
    assert sorted(reader.current()) == ["alice~A2", "bob~B1"]


def test_the_command_line_names_clients_subscriptions_by_registry_id(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``xscl subscribe`` acts as the admin: its ids as written, and a client's
    subscription listed and unsubscribed as ``<client>~<id>``."""
    home = ["--home", str(tmp_path)]
    log = SubscriptionLog(tmp_path / "registry" / "xscl")
    log.subscribe(f"W1: {JOIN};", source="api:alice", owner="alice", namespace="alice")
    queries = tmp_path / "w1.xscl"
    queries.write_text(f"W1: {JOIN};\n", encoding="utf-8")
    assert main(["subscribe", str(queries), *home]) == 0  # alice's W1 does not take it
    capsys.readouterr()
    assert main(["subscriptions", *home]) == 0
    assert capsys.readouterr().out.split() == ["W1", "alice~W1"]
    assert main(["unsubscribe", "alice~W1", *home]) == 0
    assert sorted(log.current()) == ["W1"]
