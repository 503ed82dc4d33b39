"""The streaming job entry point: in-process restarts, and spark-submit with a built wheel."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import feedparser
import pytest

from xscl.connectors.document import Document, read_envelope_file
from xscl.connectors.spool import Spool
from xscl.errors import JavaNotFoundError
from xscl.results.read import committed_markers, visible_markers
from xscl.spark_plugin.session import find_java_home
from xscl.spark_plugin.submit import main

sys.path.insert(0, str(Path(__file__).resolve().parent))
from atom_rules import check_feed

pytestmark = pytest.mark.spark
REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "rss"


def _example_docs() -> list[Document]:
    docs = [d for d in read_envelope_file(EXAMPLE / "documents.jsonl")]
    assert all(isinstance(d, Document) for d in docs)
    return docs  # type: ignore[return-value]


def _records(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def _by_id(records: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {r["result_id"]: r for r in records}


def test_restarted_job_rebuilds_state_and_matches_the_expected_results(
    spark: Any, tmp_path: Path
) -> None:
    docs = _example_docs()
    home, spool = tmp_path / "home", tmp_path / "home" / "spool"
    args = [
        "--queries", str(EXAMPLE / "queries.xscl"), "--home", str(home), "--once",
        "--max-records-per-batch", "2", "--quiet", "--output", str(tmp_path / "out.jsonl"),
    ]
    with Spool(spool, sync=False) as writer:
        writer.append(docs[:4])
    assert main(args) == 0
    # A new driver process state (a restart): the engine is rebuilt from the spool;
    # it now writes Parquet parts beside the JSON Lines ones.
    with Spool(spool, sync=False) as writer:
        writer.append(docs[4:])
    assert main([*args, "--results-format", "parquet"]) == 0
    got = _records(tmp_path / "out.jsonl")
    expected = _records(EXAMPLE / "expected-results.jsonl")
    assert _by_id(got) == _by_id(expected)
    results = home / "results" / "xscl"
    # the restart is the job's second epoch: the parts readers see are in both folders
    parts = [f / p["file"] for f, m in visible_markers(results) for p in m["parts"]]
    assert {p.parent.name for p in parts} == {"e00000001", "e00000002"}
    assert {p.suffix for p in parts} == {".jsonl", ".parquet"}
    table = spark.read.parquet(*(str(p) for p in parts if p.suffix == ".parquet"))
    in_parquet = [r["result_id"] for r in table.collect()]
    in_jsonl = [r["result_id"] for p in parts if p.suffix == ".jsonl" for r in _records(p)]
    assert in_parquet and in_jsonl
    assert sorted(in_parquet + in_jsonl) == sorted(_by_id(expected))  # each once
    assert len(got) == len(expected)
    # 3 batches of input (2 + 2, then 2), and one whenever busy_author published from a
    # join in the last (busy_then_release reads it): every planned batch committed once
    batches = [m["batch"] for m in committed_markers(home / "results" / "xscl")]
    assert batches == [f"{b:020d}" for b in range(len(batches))] and len(batches) >= 3
    feeds = home / "results" / "xscl" / "feeds"
    for query in {r["query"] for r in expected}:
        parsed = feedparser.parse(str(feeds / f"{query}.atom"))
        assert not parsed.bozo
        assert check_feed((feeds / f"{query}.atom").read_bytes()) == []
        assert parsed.feed.subtitle  # the query's text, from the job's registry
        # one entry per result, named by its record's id (the record itself is in the parts)
        assert {e.id for e in parsed.entries} == {
            f"urn:xscl:result:{r['result_id']}" for r in expected if r["query"] == query
        }
        assert all("xscl_result" not in e for e in parsed.entries)
        assert all(e.content[0].type == "text/html" and e.link for e in parsed.entries)


def test_bad_queries_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.xscl"
    bad.write_text("Q1: S/a JOIN {x = y, 1h} T/b")
    assert main(["--queries", str(bad), "--home", str(tmp_path), "--once"]) == 2
    assert "XSCL-" in capsys.readouterr().err


@pytest.mark.slow
def test_spark_submit_with_the_built_wheel(tmp_path: Path) -> None:
    wheels, site, source = tmp_path / "wheels", tmp_path / "site", tmp_path / "source"
    python = Path(sys.executable)
    # Build from a copy: an in-tree build would leave build/ and *.egg-info in the checkout.
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    shutil.copytree(REPO / "xscl", source / "xscl", ignore=ignore)
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(REPO / name, source / name)
    subprocess.run(
        [str(python), "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(wheels), str(source)],
        check=True, timeout=300,
    )
    (wheel,) = wheels.glob("xscl-*.whl")
    subprocess.run(
        [str(python), "-m", "pip", "install", "--no-deps", "-q", "--target", str(site), str(wheel)],
        check=True, timeout=300,
    )
    home = tmp_path / "home"
    with Spool(home / "spool", sync=False) as writer:
        writer.append(_example_docs())
    env = dict(os.environ, PYTHONPATH=str(site), PYSPARK_PYTHON=str(python))
    try:
        env["JAVA_HOME"] = str(find_java_home())
    except JavaNotFoundError as exc:
        pytest.skip(str(exc))
    entry = site / "xscl" / "spark_plugin" / "submit.py"
    done = subprocess.run(
        [str(python.parent / "spark-submit"), "--master", "local[2]", str(entry),
         "--queries", str(EXAMPLE / "queries.xscl"), "--spool", str(home / "spool"),
         "--home", str(home), "--once", "--output", str(tmp_path / "out.jsonl")],
        env=env, capture_output=True, text=True, timeout=300, cwd=tmp_path,
    )
    output = done.stdout + done.stderr  # spark-submit merges Python's stderr into stdout
    assert done.returncode == 0, output[-3000:]
    assert f"from {site / 'xscl'}" in output  # the wheel's copy ran, not the checkout
    # busy_then_release reads what busy_author publishes from a join: the next batch
    assert "[xscl] batch 0: 6 docs, 4 results" in output
    assert "[xscl] batch 1: 0 docs, 1 results" in output
    assert "Py4J" not in output
    expected = _records(EXAMPLE / "expected-results.jsonl")
    assert _by_id(_records(tmp_path / "out.jsonl")) == _by_id(expected)


@pytest.mark.slow
def test_a_caught_up_once_run_ends_cleanly(tmp_path: Path) -> None:
    """A second ``--once`` over a spool the job has finished reads nothing, says so, and
    exits without Spark calling back into a Python process that is going away."""
    home = tmp_path / "home"
    with Spool(home / "spool", sync=False) as writer:
        writer.append(_example_docs())
    env = dict(os.environ, PYTHONPATH=str(REPO), PYSPARK_PYTHON=sys.executable)
    try:
        env["JAVA_HOME"] = str(find_java_home())
    except JavaNotFoundError as exc:
        pytest.skip(str(exc))
    command = [sys.executable, "-m", "xscl.spark_plugin.submit", "--home", str(home), "--once"]
    first = [*command, "--queries", str(EXAMPLE / "queries.xscl")]
    outputs = []
    for argv in (first, command):
        done = subprocess.run(
            argv, env=env, capture_output=True, text=True, timeout=300, cwd=tmp_path
        )
        outputs.append(done.stdout + done.stderr)
        assert done.returncode == 0, outputs[-1][-3000:]
    assert "6 documents read this run; 5 results in total" in outputs[0]
    assert "0 documents read this run; 5 results in total" in outputs[1]
    for output in outputs:
        assert "Py4J" not in output and "Traceback" not in output, output[-3000:]
