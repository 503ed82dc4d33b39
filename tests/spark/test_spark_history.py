"""History on subscribe on Spark (``spark_plugin.history_scan``): the job's plan run once
(availableNow) over the history's span gives the in-process history's results; with the
live part they are ``xscl.reference``'s over the history and the new documents; the
scans' commits are exactly once, a later scan adding only the joins across the
subscription."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.history.kit import HOUR, QUERIES, documents, live, spooled
from tests.workloads import reference_records
from xscl.lang.parser import parse_queries
from xscl.results.read import read_results
from xscl.service.history import history_span, scan
from xscl.service.history_runs import commit
from xscl.spark_plugin.history_scan import scan_on_spark

pytestmark = pytest.mark.spark


def _lines(records: list[dict[str, Any]]) -> list[str]:
    return sorted(json.dumps(r, sort_keys=True) for r in records)


def test_history_scan_on_spark(spark: Any, tmp_path: Path) -> None:
    reader = spooled(tmp_path / "spool", documents())
    span = history_span(reader, 30, 3 * 24 * HOUR)
    whole = scan_on_spark(spark, spool=reader.path, text=QUERIES, span=span, end=40)
    in_process = scan(parse_queries(QUERIES), reader, span, 40)
    assert _lines(whole) == _lines([r.to_json_dict() for r in in_process])
    first = [r.to_json_dict() for r in scan(parse_queries(QUERIES), reader, span, span.since)]
    made_live = [r.to_json_dict() for r in live(QUERIES, reader, span.since, 40)]
    spooled_docs = [doc for _offset, doc in reader.iter_range(span.start, 40)]
    assert _lines(whole + made_live) == _lines(reference_records(QUERIES, spooled_docs))
    # published once: the first scan's, then only the joins with later documents
    folder = tmp_path / "history" / "2"
    assert commit(folder, first) == len(first) > 0
    assert commit(folder, whole) == len(whole) - len(first) > 0
    assert commit(folder, whole) == 0
    assert _lines(list(read_results(folder))) == _lines(whole)
