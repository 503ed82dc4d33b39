"""How ``xscl serve`` stops: on Ctrl-C, and when its results folder cannot be written.

Each says so in one line and exits with its documented code (issue 36, defects 9 and
10), never with pages of Java and Python traces; a run that is not ``--quiet`` shows
its start-up phases, without the JVM's and Spark's noise (defect 15).
"""

from __future__ import annotations

import os
import re
import select
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from xscl.cli.main import main
from xscl.errors import JavaNotFoundError
from xscl.spark_plugin.session import find_java_home

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "rss"
#: What ``xscl serve`` must never print (the noise of defect 15, any traceback).
NOISE = ("Traceback", "incubator modules", "AQE", "falling behind", "py4j", "Exception")


def _spool(home: Path) -> None:
    """The rss example's six items, polled in their raw form as the README does."""
    spool = str(home / "spool")
    for stream, feed in (("vendor", "vendor.rss"), ("news", "news.atom")):
        feed_path = str(EXAMPLE / "feeds" / feed)
        poll = ["poll", "--quiet", "--form", "raw", "--stream", stream, "--spool", spool]
        assert main([*poll, feed_path]) == 0


def _lines_until(process: subprocess.Popen[str], text: str, deadline: float) -> list[str]:
    """The process's stderr lines up to the first holding ``text`` (bounded by ``deadline``)."""
    assert process.stderr is not None
    lines: list[str] = []
    while time.monotonic() < deadline:
        ready, _, _ = select.select([process.stderr], [], [], 1.0)
        if not ready:
            continue
        line = process.stderr.readline()
        if not line:
            break
        lines.append(line.rstrip("\n"))
        if text in line:
            return lines
    raise AssertionError(f"no line with {text!r} in time:\n" + "\n".join(lines))


@pytest.mark.spark
def test_ctrl_c_stops_serve_in_one_line_with_exit_130(tmp_path: Path) -> None:
    """Ctrl-C (SIGINT to the process group, as a terminal sends it) while batch 0 runs:
    the query and the session are stopped, one line says where, exit 130. Before, it
    exited 0 after 45-80 lines of Py4J tracebacks (issue 36, defect 10); then, mid-batch,
    after Spark's aborted write, killed tasks and a worker's BrokenPipeError."""
    try:
        java = find_java_home()
    except JavaNotFoundError as exc:
        pytest.skip(str(exc))
    home = tmp_path / "home"
    _spool(home)
    env = dict(os.environ, PYTHONPATH=str(REPO), JAVA_HOME=str(java))
    command = [sys.executable, "-m", "xscl", "serve", "--queries", str(EXAMPLE / "queries.xscl"),
               "--home", str(home), "--trigger-seconds", "0.5",
               "--progress-seconds", "0.5"]  # fmt: skip
    process = subprocess.Popen(
        command, env=env, cwd=tmp_path, text=True, start_new_session=True,
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )  # fmt: skip
    try:
        # mid-batch: a line of the running batch 0 (its stages' tasks) was printed
        started = _lines_until(process, "[xscl] batch 0 (", time.monotonic() + 150)
        os.killpg(process.pid, signal.SIGINT)
        _out, rest = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
    lines = [*started, *rest.splitlines()]
    text = "\n".join(lines)
    assert process.returncode == 130, text
    assert [ln for ln in lines if "interrupted" in ln] == [lines[-1]], text
    assert re.fullmatch(r"xscl serve: interrupted; stopped (after batch \d+|before its first "
                        r"batch)", lines[-1]), text  # fmt: skip
    assert not [ln for ln in lines if any(word in ln for word in (*NOISE, "ERROR", "WARN"))], text
    phases = [ln.split("start-up: ")[1].split(" ")[0] for ln in lines if "start-up: " in ln]
    assert phases == ["subscribing", "starting", "4", "streaming"], text


@pytest.mark.spark
def test_a_results_folder_that_cannot_be_written_stops_with_exit_4_in_one_line(
    spark: Any, tmp_path: Path, capfd: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The join groups cannot stage their results (the folder turned read-only, full,
    or, as here, its staging folder is a file): exit 4 and one ``XSCL-S023`` line.
    Before, exit 1 after ~250 lines of Java and Python traces (issue 36, defect 9)."""
    import xscl.results.commit as commit

    home = tmp_path / "home"
    _spool(home)
    capfd.readouterr()
    real_clear = commit.clear_staging

    def staging_unwritable(path: str | Path) -> None:  # as the job starts its epoch
        real_clear(path)
        (Path(path) / commit.STAGING).write_text("not a folder")

    monkeypatch.setattr(commit, "clear_staging", staging_unwritable)
    args = ["serve", "--queries", str(EXAMPLE / "queries.xscl"), "--home", str(home), "--once",
            "--quiet"]  # fmt: skip
    assert main(args) == 4
    time.sleep(0.5)  # the JVM's stderr is passed on by a thread: let it settle
    err = capfd.readouterr().err.splitlines()
    told = [ln for ln in err if "XSCL-S023" in ln]
    assert len(told) == 1, err
    staging = home / "results" / "xscl" / "e00000001" / "_staging"
    assert told[0] == (
        f"xscl serve: XSCL-S023 the results folder {staging.parent.resolve()} cannot be "
        f"written: File exists: {staging.resolve()}"
    )
    assert not [ln for ln in err if any(word in ln for word in (*NOISE, "ERROR"))], err
    # in process the test's session is reused, which Spark warns about; nothing else
    reuse = ("Using an existing Spark session", "replaced a previously registered data source")
    said = [ln for ln in err if not any(warning in ln for warning in reuse)]
    assert len(said) == 2 and said[0].startswith("xscl serve: primary at epoch 1"), err


#: The start of Spark's text of the query that failed writing its offset log on a full
#: disk (issue 36, tried again as a new user: a tmpfs home filled up mid-run).
DISK_FULL = """java.io.IOException: No space left on device
=== Streaming Query ===
Identifier: xscl [id = 7e7c0c18, runId = 4f138dc9]

Logical Plan:
WriteToMicroBatchDataSource xscl-job-output
"""
SPARK_TEXT = """org.apache.hadoop.fs.FSError: java.io.IOException: No space left on device
\tat org.apache.hadoop.fs.RawLocalFileSystem$LocalFSFileOutputStream.write(RawLocal...)
Caused by: java.io.IOException: No space left on device
"""  # fmt: skip


def test_a_failed_query_is_told_in_one_line_with_its_exit_code(tmp_path: Path) -> None:
    """A home whose disk is full or read-only: exit 4 and one XSCL-S024 line naming it
    (before: exit 1 and ~100 lines of Java trace and the query's plan); the results
    folder's XSCL-S023 as before; any other failure exit 1, cut before the plan."""
    from xscl.spark_plugin.serve import query_failure

    home = tmp_path / "home"
    for text in (DISK_FULL, SPARK_TEXT, SPARK_TEXT.replace("No space left on device",
                                                          "Read-only file system")):  # fmt: skip
        code, line = query_failure(text, home)
        reason = "Read-only file system" if "Read-only" in text else "No space left on device"
        assert (code, line) == (4, f"XSCL-S024 the job's home {home} cannot be written (its "
                                   f"checkpoint or Spark's working files): {reason}")  # fmt: skip
    s023 = "XSCL-S023 the results folder /r cannot be written: x"
    assert query_failure(f"Traceback...\nxscl.errors.OutputWriteError: {s023}\n", home) == (4, s023)
    other = "java.lang.IllegalStateException: boom\n=== Streaming Query ===\nLogical Plan:\nX\n"
    assert query_failure(other, home) == (
        1, "the streaming query failed: java.lang.IllegalStateException: boom"
    )  # fmt: skip
    assert query_failure(other, home, "the CEL query")[1].startswith("the CEL query failed: ")
