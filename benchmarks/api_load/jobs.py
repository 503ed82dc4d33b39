"""The job the load runs beside: ``xscl serve`` on ``local[2]`` fed the rss example's
documents through the spool, or a results writer that commits results as a job does.

``ServedJob`` starts ``xscl serve --queries examples/rss/queries.xscl`` on the home
and appends shifted copies of ``examples/rss/documents.jsonl`` (new ids, timestamps
of now) to its spool every second, so the job runs a micro-batch (trigger 0.5 s)
while the clients load the API, and applies their registry events as they come.

``ResultsWriter`` (no Spark, for the fast test and for ``--job writer``) commits,
every ``interval`` seconds, one batch with a result for each subscription currently
in the registry, through the job's commit protocol (``results.commit``: staged part,
then marker), so the API pages and invokes committed results as it does beside a job.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from xscl.connectors.document import Document, read_envelope_file
from xscl.connectors.spool import Spool
from xscl.results.commit import StagedPart, commit_batch, open_epoch
from xscl.results.read import committed_markers
from xscl.service.subscriptions import SubscriptionLog

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "rss"


class ResultsWriter:
    """A thread committing a batch of results for the current subscriptions."""

    def __init__(self, home: Path, interval: float = 0.25, name: str = "xscl") -> None:
        self.log = SubscriptionLog(home / "registry" / name)
        self.root = home / "results" / name
        self.interval = interval
        self.batches = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="results-writer", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()

    def _loop(self) -> None:
        folder = open_epoch(self.root, 1, -1)
        while not self._stop.wait(self.interval):
            now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
            rows = [
                {
                    "query": qid,
                    "result_id": f"{self.batches}-{qid}",
                    "docs": [{"stream": "vendor", "docid": f"d{self.batches}", "ts": now}],
                }
                for qid in sorted(self.log.current())
            ]
            staged = folder / f"staged-{self.batches}.jsonl"
            staged.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
            commit_batch(folder, f"{self.batches:020d}", [StagedPart(0, str(staged), len(rows))])
            self.batches += 1


class ServedJob:
    """``xscl serve`` on the home, and a feeder appending documents to its spool."""

    def __init__(self, home: Path, master: str, log_file: Path, nice: int = 0) -> None:
        self.home = home
        self.master = master
        self.log_file = log_file
        #: the job's niceness (its JVM and Python workers inherit it)
        self.nice = nice
        self.appended = 0
        self._stop = threading.Event()
        self._feeder = threading.Thread(target=self._feed, name="spool-feeder", daemon=True)
        self._example = [d for d in read_envelope_file(EXAMPLE / "documents.jsonl")]
        self.process: subprocess.Popen[bytes] | None = None

    def start(self, timeout: float) -> None:
        """Start the job and the feeder; return once the job has committed a batch."""
        (self.home / "spool").mkdir(parents=True, exist_ok=True)
        self._feeder.start()
        command = [
            *(["nice", "-n", str(self.nice)] if self.nice else []),
            sys.executable, "-m", "xscl", "serve",
            "--queries", str(EXAMPLE / "queries.xscl"),
            "--home", str(self.home), "--master", self.master,
            "--trigger-seconds", "0.5", "--quiet",
        ]  # fmt: skip
        with self.log_file.open("wb") as out:
            env = {**os.environ, "PYTHONPATH": str(ROOT)}
            self.process = subprocess.Popen(command, stdout=out, stderr=out, env=env)
        deadline = time.monotonic() + timeout
        while not committed_markers(self.home / "results" / "xscl"):
            if self.process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"xscl serve did not commit a batch: see {self.log_file}")
            time.sleep(0.5)

    def stop(self) -> None:
        self._stop.set()
        if self._feeder.is_alive():
            self._feeder.join()
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
            try:
                self.process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()

    def _feed(self) -> None:
        cycle = 0
        with Spool(self.home / "spool") as spool:
            while not self._stop.wait(0 if cycle == 0 else 1.0):
                now = int(time.time() * 1_000_000)
                docs = []
                for i, doc in enumerate(self._example):
                    assert isinstance(doc, Document)
                    docs.append(Document(doc.stream, f"{doc.docid}#load{cycle}", now + i, doc.xml))
                spool.append(docs)
                self.appended += len(docs)
                cycle += 1
