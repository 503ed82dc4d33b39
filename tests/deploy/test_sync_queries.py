"""files/sync_queries.py (the subscriptions Job) brings a job's registry to a query file.

Run as the Job runs it, against a real registry under a temporary home: it calls the real
``xscl unsubscribe`` / ``xscl subscribe`` (no Spark involved), and the registry's subscribed
queries must then equal the file's.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.deploy.chartkit import CHART, load_script
from xscl.lang.parser import parse_file
from xscl.service.subscriptions import SubscriptionLog

SCRIPT = CHART / "files" / "sync_queries.py"
sync = load_script("sync_queries.py")

BOOKS = "books: S//book->x[./author->a] FOLLOWED BY {a = b, 1h} S//blog->y[./author->b];\n"
SAME = "same: S//a->x[./t->t1] JOIN {t1 = t2, 1d} T//b->y[./t->t2];\n"
PUBLISHER = "pub: S//a->x[./w->w1] FOLLOWED BY {w1 = w2, 1h} S//a->y[./w->w2] PUBLISH pairs;\n"
READER = "reader: pairs/result->r FOLLOWED BY {TRUE, 1d} T//b->z;\n"


def run(queries: str, home: Path, tmp: Path) -> subprocess.CompletedProcess[str]:
    path = tmp / "queries.xscl"
    path.write_text(queries)
    return subprocess.run(
        [sys.executable, str(SCRIPT), "--queries", str(path), "--home", str(home)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def registry(home: Path) -> SubscriptionLog:
    return SubscriptionLog(home / "registry" / "xscl")


def subscribed(home: Path) -> dict[str, str]:
    from xscl.lang.printer import format_query

    return {qid: format_query(q) for qid, q in registry(home).current().items()}


def expected(text: str) -> dict[str, str]:
    from xscl.lang.printer import format_query

    return {q.qid: format_query(q) for q in parse_file(text).queries}


def start(home: Path, text: str) -> None:
    """What xscl serve --queries does with an empty registry."""
    registry(home).subscribe(text, source="start.xscl")


def test_an_empty_registry_is_left_to_xscl_serve(tmp_path: Path) -> None:
    done = run(BOOKS, tmp_path / "home", tmp_path)
    assert done.returncode == 0, done.stderr
    assert "empty" in done.stdout
    assert registry(tmp_path / "home").versions() == []


def test_nothing_changes_when_the_file_is_the_registry(tmp_path: Path) -> None:
    home = tmp_path / "home"
    start(home, BOOKS + SAME)
    done = run(SAME + BOOKS, home, tmp_path)
    assert done.returncode == 0, done.stderr
    assert registry(home).versions() == [1]


def test_added_removed_and_changed_queries(tmp_path: Path) -> None:
    home = tmp_path / "home"
    start(home, BOOKS + SAME)
    changed_books = BOOKS.replace("1h", "2h")
    wanted = changed_books + PUBLISHER
    done = run(wanted, home, tmp_path)
    assert done.returncode == 0, done.stderr
    assert subscribed(home) == expected(wanted)
    events = [(e.op, sorted(e.ids)) for e in registry(home).events()]
    assert events == [
        ("subscribe", ["books", "same"]),
        ("unsubscribe", ["books", "same"]),
        ("subscribe", ["books", "pub"]),
    ]


def test_a_changed_publisher_comes_back_while_its_reader_stays(tmp_path: Path) -> None:
    home = tmp_path / "home"
    start(home, PUBLISHER + READER)
    wanted = PUBLISHER.replace("1h", "3h") + READER
    done = run(wanted, home, tmp_path)
    assert done.returncode == 0, done.stderr
    assert subscribed(home) == expected(wanted)


def test_removing_a_publisher_its_reader_needs_is_refused(tmp_path: Path) -> None:
    home = tmp_path / "home"
    start(home, PUBLISHER + READER)
    done = run(READER, home, tmp_path)
    assert done.returncode == 2
    assert "refused" in done.stderr and "reader" in done.stderr
    assert sorted(subscribed(home)) == ["pub", "reader"]


def test_an_invalid_file_changes_nothing(tmp_path: Path) -> None:
    home = tmp_path / "home"
    start(home, BOOKS)
    done = run(BOOKS + "broken: S//a->x FOLLOWED BY {x = nope, 1h} S//b->y;\n", home, tmp_path)
    assert done.returncode == 2
    assert "nothing changed" in done.stderr
    assert registry(home).versions() == [1]


@pytest.mark.parametrize(
    ("current", "wanted", "remove", "added", "force"),
    [
        (BOOKS, BOOKS, (), (), False),
        (BOOKS, BOOKS + SAME, (), ("same",), False),
        (BOOKS + SAME, SAME, ("books",), (), False),
        (PUBLISHER + READER, PUBLISHER.replace("1h", "2h") + READER, ("pub",), ("pub",), True),
        (PUBLISHER + READER, READER, ("pub",), (), False),
        (PUBLISHER + READER, SAME, ("pub", "reader"), ("same",), False),
    ],
)
def test_plan_changes(
    current: str, wanted: str, remove: tuple[str, ...], added: tuple[str, ...], force: bool
) -> None:
    now = {q.qid: q for q in parse_file(current).queries}
    plan = sync.plan_changes(now, parse_file(wanted).queries)
    assert (plan.remove, tuple(q.qid for q in plan.add), plan.force) == (remove, added, force)
