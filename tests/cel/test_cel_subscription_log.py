"""The CEL registry log (``service.cel_subscriptions``, docs/cel.md 10.7)."""

from __future__ import annotations

from pathlib import Path

import pytest

from xscl.service.cel_subscriptions import CelSubscriptionLog
from xscl.service.subscriptions import SubscriptionEvent

DECLARE = "DECLARE STREAM S(a, b);\n"


def test_a_subscribe_overtaken_by_another_writer_means_what_the_replay_makes_of_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two writers check against event 0; the other one writes ``q`` first, so this
    one's event 2 adds only ``r``: what it reports is what the job will run."""
    log = CelSubscriptionLog(tmp_path / "registry", {})
    other = CelSubscriptionLog(tmp_path / "registry", {})
    append = log.log.append

    def overtaken(*args: object, **kwargs: object) -> SubscriptionEvent:
        monkeypatch.setattr(log.log, "append", append)
        other.subscribe(DECLARE + "q: FROM S NEXT S", source="other.cel")
        return append(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(log.log, "append", overtaken)
    event, errors = log.subscribe(DECLARE + "q: FROM S NEXT S;\nr: FROM S", source="mine.cel")
    assert event is not None and (event.version, event.ids) == (2, ("r",))
    assert [(e.code, e.qid) for e in errors] == [("CEL-S001", "q")]
    assert log.live().ids() == ["q", "r"]
    assert log.live().events == {"q": 1, "r": 2}


def test_a_file_without_a_valid_query_writes_no_event(tmp_path: Path) -> None:
    log = CelSubscriptionLog(tmp_path / "registry", {})
    event, errors = log.subscribe(DECLARE + "x: FROM S NEXT{$2.nope = $1.a} S", source="x.cel")
    assert event is None and [e.code for e in errors] == ["CEL-V001"]
    assert log.versions() == []
