"""``xscl serve --fresh-workers``: which Spark setting the session gets (``worker_reuse``).

``auto`` asks for fresh Python workers (``spark.python.worker.reuse=false``) from
``FRESH_WORKERS_FROM`` subscriptions, says so in a start-up line, and leaves a setting
given to spark-submit alone. The session itself is not started here: the settings
``xscl serve`` would start it with are captured.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from xscl.service.subscriptions import SubscriptionLog
from xscl.spark_plugin import serve, session, worker_reuse
from xscl.spark_plugin.session import XsclHome


def _settings(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, choice: str, submitted: str = ""
) -> dict[str, str]:
    home = XsclHome(tmp_path / "home").create()
    log = SubscriptionLog(home.registry / "job")
    log.subscribe("a: S//item->x; b: S//entry->y;\nc: S//item->x[./t = 'w'];", source="q.xscl")
    captured: dict[str, str] = {}

    def build(master: Any, name: str, conf: dict[str, str], **_: Any) -> str:
        captured.update(conf)
        return "session"

    monkeypatch.setattr(session, "build_session", build)
    monkeypatch.setenv("PYSPARK_SUBMIT_ARGS", submitted)
    request = serve.ServeRequest(home, "job", tmp_path / "spool", None, fresh_workers=choice)
    count = serve._subscription_count(log)[0]
    assert serve._session(request, serve.StartUp(quiet=False), count) == "session"
    return captured


def test_auto_asks_for_fresh_workers_from_the_threshold_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    assert worker_reuse.REUSE_SETTING not in _settings(tmp_path / "a", monkeypatch, "auto")
    monkeypatch.setattr(worker_reuse, "FRESH_WORKERS_FROM", 3)  # the registry holds 3
    settings = _settings(tmp_path / "b", monkeypatch, "auto")
    assert settings[worker_reuse.REUSE_SETTING] == "false"
    said = capsys.readouterr().err
    assert "each task gets a fresh Python worker" in said
    assert "builds the 3 subscriptions (--fresh-workers auto)" in said


def test_on_and_off_and_a_submitted_setting(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert _settings(tmp_path / "a", monkeypatch, "on")[worker_reuse.REUSE_SETTING] == "false"
    assert worker_reuse.REUSE_SETTING not in _settings(tmp_path / "b", monkeypatch, "off")
    submitted = "--conf spark.python.worker.reuse=true pyspark-shell"
    assert worker_reuse.REUSE_SETTING not in _settings(tmp_path / "c", monkeypatch, "on", submitted)
