"""kill -9 of the streaming job's driver, then a restart: exactly-once results.

The driver (Python + the JVM it started, one process group) is killed with
SIGKILL after its first micro-batch committed, then restarted ``--once`` to the
end of the spool. The final result set must equal a
failure-free run (the reference evaluator's) and the results directory must not
hold any result_id twice across all committed part files.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from xscl.connectors.document import Document, envelope_line, read_envelope_file
from xscl.connectors.spool import Spool
from xscl.reference import run_batch as reference_run_batch
from xscl.spark_plugin.results_sink import committed_markers
from xscl.spark_plugin.submit import main

pytestmark = [pytest.mark.spark, pytest.mark.slow]
REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "rss"
#: Seconds a driver may take to start and commit the batches we wait for.
STARTUP_TIMEOUT = 180.0


def _documents() -> list[Document]:
    """The rss example plus copies shifted by 10 days with new ids: ~18 docs, many results."""
    example = [d for d in read_envelope_file(EXAMPLE / "documents.jsonl")]
    assert all(isinstance(d, Document) for d in example)
    docs: list[Document] = list(example)  # type: ignore[arg-type]
    ten_days = 10 * 86_400_000_000
    for copy in (1, 2):
        for doc in example:
            assert isinstance(doc, Document)
            docs.append(Document(doc.stream, f"{doc.docid}#copy{copy}",
                                 doc.ts_micros + copy * ten_days, doc.xml))
    return docs


def _start_driver(home: Path, log: Path) -> subprocess.Popen[bytes]:
    args = [
        sys.executable, "-m", "xscl.spark_plugin.submit",
        "--queries", str(EXAMPLE / "queries.xscl"), "--spool", str(home / "spool"),
        "--home", str(home), "--trigger-seconds", "0.5", "--max-records-per-batch", "2",
        "--quiet",
    ]
    with log.open("ab") as sink:
        # Its own process group: SIGKILL reaches the driver JVM too (a crashed host).
        return subprocess.Popen(args, stdout=sink, stderr=subprocess.STDOUT, cwd=home,
                                start_new_session=True)


def _kill_after_commits(driver: subprocess.Popen[bytes], results: Path, commits: int,
                        log: Path) -> int:
    """SIGKILL the driver's process group once ``commits`` batches are committed."""
    deadline = time.monotonic() + STARTUP_TIMEOUT
    try:
        while len(committed_markers(results)) < commits:
            if driver.poll() is not None:
                pytest.fail(f"the driver exited early:\n{log.read_text(errors='replace')[-3000:]}")
            if time.monotonic() > deadline:
                tail = log.read_text(errors="replace")[-3000:]
                pytest.fail(f"no {commits} commits in time:\n{tail}")
            time.sleep(0.05)
    finally:
        os.killpg(driver.pid, signal.SIGKILL)
        driver.wait(timeout=30)
    return len(committed_markers(results))


def _result_ids_of_parts(results: Path) -> list[str]:
    """Every result_id in every committed part file (no deduplication)."""
    ids: list[str] = []
    for marker in committed_markers(results):
        for part in marker["parts"]:
            text = (results / part["file"]).read_text(encoding="utf-8")
            ids.extend(json.loads(line)["result_id"] for line in text.splitlines() if line)
    return ids


def test_killed_driver_restarted_gives_the_failure_free_result_set(
    spark: Any, tmp_path: Path
) -> None:
    docs = _documents()
    source = tmp_path / "docs.jsonl"
    source.write_text("".join(envelope_line(d) + "\n" for d in docs), encoding="utf-8")
    reference = tmp_path / "reference.jsonl"
    assert reference_run_batch((EXAMPLE / "queries.xscl").read_text(encoding="utf-8"),
                               source, reference).results > 8
    home = tmp_path / "home"
    with Spool(home / "spool", sync=False) as writer:
        writer.append(docs)
    results, log = home / "results" / "xscl", tmp_path / "driver.log"
    batches = -(-len(docs) // 2)

    first = _kill_after_commits(_start_driver(home, log), results, 1, log)
    assert first < batches, "the driver finished before it was killed"

    # The restart runs in this process on the shared session (a JVM start is ~30-50 s
    # on a loaded machine): a new pipeline, so its state is rebuilt from the spool.
    final = tmp_path / "final.jsonl"
    assert main(["--queries", str(EXAMPLE / "queries.xscl"), "--spool", str(home / "spool"),
                 "--home", str(home), "--max-records-per-batch", "2", "--quiet", "--once",
                 "--output", str(final)]) == 0
    expected = {json.loads(line)["result_id"]: json.loads(line)
                for line in reference.read_text(encoding="utf-8").splitlines()}
    got = [json.loads(line) for line in final.read_text(encoding="utf-8").splitlines()]
    assert {r["result_id"]: r for r in got} == expected
    assert len(got) == len(expected)
    ids = _result_ids_of_parts(results)
    assert sorted(ids) == sorted(expected), "a result was committed twice or is missing"
    assert len(committed_markers(results)) == batches
