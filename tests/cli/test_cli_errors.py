"""CLI errors a user can act on: one line naming the path or the query, an exit code.

Exit codes: 0 success, 1 I/O (a path cannot be written, no feed could be read),
2 usage or invalid input.  Tests run as root, where ``chmod`` stops nothing, so
an unwritable path is one *under a regular file* (``some_file/sub``): creating
a directory there fails with ENOTDIR for any user.
"""

from __future__ import annotations

import errno
import json
import os
from pathlib import Path
from typing import Any

import pytest

from xscl.cli.main import main

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"


def _blocked(tmp_path: Path) -> Path:
    """A regular file: any path under it cannot be created (even by root)."""
    blocker = tmp_path / "a_file"
    blocker.write_text("not a directory\n")
    return blocker


def _one_line(err: str) -> str:
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    assert "Traceback" not in err
    return lines[0]


# -- validation: the caret is under the unbound variable -------------------------------


def test_check_points_the_caret_at_the_unbound_variable(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    queries = tmp_path / "q.xscl"
    queries.write_text("Q1: S//a->x\n  FOLLOWED BY {x = y1, 1h}\n  T//b->y\n")
    assert main(["check", str(queries)]) == 2
    err = capsys.readouterr().err.splitlines()
    assert err[0].endswith(
        "Q1:2:20: XSCL-V001 unbound variable 'y1' in the join predicate (expected: x, y)"
    )
    assert err[1:3] == ["    FOLLOWED BY {x = y1, 1h}", " " * 21 + "^"]


# -- dead letters name one line number: the file's ------------------------------------


@pytest.mark.parametrize("engine", ["local", "reference"])
def test_dead_letters_name_the_file_line_only(engine: str, tmp_path: Path) -> None:
    good = (EXAMPLES / "thesis" / "documents.jsonl").read_text(encoding="utf-8").splitlines()
    lines = [
        good[0],
        "",  # blank lines are skipped but counted
        "this is not json",  # line 3
        '{"stream": "S", "docid": "x", "ts": 1, "xml": "<a>"}',  # line 4: bad XML
        '{"stream": "S", "docid": "y", "ts": 1, "xml": "<a/>",}',  # line 5: trailing comma
    ]
    docs = tmp_path / "docs.jsonl"
    docs.write_text("\n".join(lines) + "\n", encoding="utf-8")
    out = tmp_path / "r.jsonl"
    code = main(
        [
            "run",
            "--engine",
            engine,
            "--queries",
            str(EXAMPLES / "thesis" / "queries.xscl"),
            "--input",
            str(docs),
            "--output",
            str(out),
        ]
    )
    assert code == 0
    dead = [json.loads(line) for line in (tmp_path / "r.deadletter.jsonl").read_text().splitlines()]
    assert [d["line"] for d in dead] == [3, 4, 5]
    assert dead[0]["reason"].endswith("not valid JSON: Expecting value at column 1")
    assert dead[2]["reason"].endswith(
        "not valid JSON: Expecting property name enclosed in double quotes at column 54"
    )
    for letter in (dead[0], dead[2]):
        assert "line 1" not in letter["reason"] and "char" not in letter["reason"]


# -- run: an --output that cannot be written --------------------------------------------


@pytest.mark.parametrize("engine", ["local", "reference"])
def test_run_with_an_output_under_a_file_exits_1_in_one_line(
    engine: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Unwritable --output: a path under a regular file (root cannot create it either)."""
    out = _blocked(tmp_path) / "sub" / "results.jsonl"
    code = main(
        [
            "run",
            "--engine",
            engine,
            "--queries",
            str(EXAMPLES / "thesis" / "queries.xscl"),
            "--input",
            str(EXAMPLES / "thesis" / "documents.jsonl"),
            "--output",
            str(out),
        ]
    )
    assert code == 1
    line = _one_line(capsys.readouterr().err)
    assert line == (
        f"xscl run: cannot write --output {out}: {tmp_path / 'a_file'} is a file, not a "
        "directory; give --output a file path in a directory you can write to"
    )


def test_run_with_a_read_only_output_folder_exits_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A read-only folder, simulated: ``os.access`` says no (root would pass a chmod)."""
    folder = tmp_path / "ro"
    folder.mkdir()
    real_access = os.access
    monkeypatch.setattr(
        os, "access", lambda p, mode: False if Path(p) == folder else real_access(p, mode)
    )
    code = main(
        [
            "run",
            "--queries",
            str(EXAMPLES / "thesis" / "queries.xscl"),
            "--input",
            str(EXAMPLES / "thesis" / "documents.jsonl"),
            "--output",
            str(folder / "r.jsonl"),
        ]
    )
    assert code == 1
    line = _one_line(capsys.readouterr().err)
    assert f"cannot write --output {folder / 'r.jsonl'}: {folder} is not writable" in line
    assert list(folder.iterdir()) == []


# -- subscribe / unsubscribe: a --home that cannot be written --------------------------


def _queries(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "q.xscl"
    path.write_text(text, encoding="utf-8")
    return path


def test_subscribe_with_a_home_under_a_file_exits_1_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Unwritable --home: a path under a regular file."""
    home = _blocked(tmp_path) / "home"
    queries = _queries(tmp_path, "Q1: S//a->x JOIN {x=y, 1h} S//b->y;\n")
    assert main(["subscribe", str(queries), "--home", str(home)]) == 1
    line = _one_line(capsys.readouterr().err)
    assert line == (
        f"xscl subscribe: cannot write the job's registry {home / 'registry' / 'xscl'} under "
        f"--home {home}: {tmp_path / 'a_file'} is a file, not a directory; "
        "pass a --home you can write to"
    )


def test_unsubscribe_that_cannot_write_the_registry_exits_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A registry that became read-only, simulated: writing the event file fails (EROFS)."""
    import xscl.connectors.durable as durable

    home = tmp_path / "home"
    queries = _queries(tmp_path, "Q1: S//a->x JOIN {x=y, 1h} S//b->y;\n")
    assert main(["subscribe", str(queries), "--home", str(home)]) == 0
    capsys.readouterr()

    def read_only(path: Path, data: bytes) -> None:
        raise OSError(errno.EROFS, "Read-only file system", str(path))

    monkeypatch.setattr(durable, "write_synced", read_only)
    assert main(["unsubscribe", "Q1", "--home", str(home)]) == 1
    line = _one_line(capsys.readouterr().err)
    assert line.startswith(f"xscl unsubscribe: cannot write the job's registry {home}")
    assert line.endswith("Read-only file system; pass a --home you can write to")


# -- subscriptions: a --home or registry that is not there -----------------------------


@pytest.mark.parametrize("kind", ["missing", "file"])
def test_subscriptions_without_a_home_exits_2(
    kind: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    home = tmp_path / "nowhere" if kind == "missing" else _blocked(tmp_path)
    assert main(["subscriptions", "--home", str(home)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    what = "does not exist" if kind == "missing" else "is not a directory"
    assert _one_line(captured.err) == (
        f"xscl subscriptions: --home {home} {what}: pass the --home the job was started with "
        "('xscl serve --home HOME' or 'xscl subscribe FILE --home HOME')"
    )


def test_subscriptions_of_an_unknown_job_name_the_jobs_there(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    assert main(["subscriptions", "--home", str(home)]) == 2
    assert "add queries with 'xscl subscribe FILE --home" in _one_line(capsys.readouterr().err)
    queries = _queries(tmp_path, "Q1: S//a->x;\n")
    assert main(["subscribe", str(queries), "--home", str(home), "--name", "news"]) == 0
    capsys.readouterr()
    assert main(["subscriptions", "--home", str(home), "--name", "news"]) == 0
    assert capsys.readouterr().out == "Q1\n"
    assert main(["subscriptions", "--home", str(home)]) == 2
    line = _one_line(capsys.readouterr().err)
    assert line.startswith(f"xscl subscriptions: no registry of job 'xscl' under --home {home}")
    assert line.endswith("jobs with a registry there: news (pass --name)")


def test_subscriptions_of_an_unreadable_registry_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Unreadable, simulated: listing the registry folder fails with EACCES (root reads all)."""
    home = tmp_path / "home"
    assert main(["subscribe", str(_queries(tmp_path, "Q1: S//a->x;\n")), "--home", str(home)]) == 0
    capsys.readouterr()
    folder = home / "registry" / "xscl"
    real_listdir = os.listdir

    def denied(path: Any = ".") -> list[str]:
        if Path(path) == folder:
            raise PermissionError(errno.EACCES, "Permission denied", str(path))
        return real_listdir(path)

    monkeypatch.setattr(os, "listdir", denied)
    assert main(["subscriptions", "--home", str(home)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert _one_line(captured.err) == (
        f"xscl subscriptions: cannot read the registry under --home {home}: "
        f"{folder}: Permission denied"
    )


# -- unsubscribe: a PUBLISHed stream that others read ----------------------------------

PUBLISHING = """
P: S//a->x JOIN {x=y, 1h} T//b->y PUBLISH pairs;
R: pairs/result->r[./a->u] JOIN {u=v, 1h} S//c->v;
R2: pairs//a->w;
Other: S//d->z;
"""


def test_unsubscribe_of_a_publisher_with_readers_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    home = tmp_path / "home"
    assert main(["subscribe", str(_queries(tmp_path, PUBLISHING)), "--home", str(home)]) == 0
    capsys.readouterr()
    assert main(["unsubscribe", "P", "--home", str(home)]) == 2
    assert _one_line(capsys.readouterr().err) == (
        "xscl unsubscribe: refused: P publishes stream 'pairs', read by R, R2: unsubscribe the "
        "readers too ('xscl unsubscribe P R R2'), or pass --force to leave them without that "
        "input"
    )
    assert main(["unsubscribe", "P", "R", "--home", str(home)]) == 2  # R2 still reads
    assert "read by R2:" in capsys.readouterr().err
    assert main(["unsubscribe", "Other", "R", "--home", str(home)]) == 0  # readers may go
    assert main(["unsubscribe", "P", "--force", "--home", str(home)]) == 0
    capsys.readouterr()
    assert main(["subscriptions", "--home", str(home)]) == 0
    assert capsys.readouterr().out == "R2\n"


# -- poll: unwritable paths, and passes in which feeds failed --------------------------

FEEDS = EXAMPLES / "rss" / "feeds"


@pytest.mark.parametrize("option", ["--spool", "--state", "--dead-letter"])
def test_poll_with_a_path_under_a_file_exits_1_in_one_line(
    option: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Unwritable spool, state or dead-letter path: under a regular file."""
    bad = _blocked(tmp_path) / "x"
    args = ["poll", "--quiet", "--spool", str(tmp_path / "spool"), str(FEEDS)]
    if option == "--spool":
        args[3] = str(bad)
    else:
        args[1:1] = [option, str(bad)]
    assert main(args) == 1
    captured = capsys.readouterr()
    assert _one_line(captured.err) == (
        f"xscl poll: cannot write {option} {bad}: {tmp_path / 'a_file'} is a file, not a "
        f"directory; pass a {option} path you can write to"
    )
    assert captured.out == ""


def test_poll_exits_1_when_no_feed_could_be_read(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spool = tmp_path / "spool"
    missing = [str(tmp_path / "gone.xml"), str(tmp_path / "gone.atom")]
    assert main(["poll", "--quiet", "--spool", str(spool), *missing]) == 1
    err = capsys.readouterr().err
    assert _one_line(err) == (
        "xscl poll: no feed could be read: 2 of 2 feeds failed "
        f"(dead letters: {spool / 'deadletter.jsonl'})"
    )


def test_poll_exits_0_when_some_feeds_were_read_and_says_how_many_failed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spool = tmp_path / "spool"
    args = ["poll", "--quiet", "--json", "--spool", str(spool), str(tmp_path / "gone.xml")]
    assert main([*args, str(FEEDS)]) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out)["feeds_ok"] == 2
    assert _one_line(captured.err) == (
        f"xscl poll: 1 of 3 feeds failed (dead letters: {spool / 'deadletter.jsonl'})"
    )


def test_poll_names_a_missing_file_and_an_unsupported_scheme_by_their_codes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 36, defect 13: a missing file was C022 'unsupported location', and ftp://
    was taken for a path; a file: URL is a path."""
    spool = tmp_path / "spool"
    gone, ftp = str(tmp_path / "gone.rss"), "ftp://example.org/x.rss"
    news = (FEEDS / "news.atom").resolve().as_uri()
    assert main(["poll", "--quiet", "--json", "--spool", str(spool), gone, ftp, news]) == 0
    assert json.loads(capsys.readouterr().out)["feeds_ok"] == 1
    letters = [json.loads(t) for t in (spool / "deadletter.jsonl").read_text().splitlines()]
    assert [(d["source"], d["code"]) for d in letters] == [
        (gone, "XSCL-C023"),
        (ftp, "XSCL-C022"),
    ]
    assert letters[0]["reason"] == f"cannot read {gone}: No such file or directory"
    assert letters[1]["reason"].startswith("cannot poll ftp://example.org/x.rss: only files")


def test_poll_exits_1_when_no_feed_is_found(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    assert main(["poll", "--quiet", "--spool", str(tmp_path / "spool"), str(empty)]) == 1
    assert _one_line(capsys.readouterr().err).startswith(f"xscl poll: no feed found in {empty}")


# -- serve: everything a user can get wrong is said before Spark starts ----------------

RSS_QUERIES = EXAMPLES / "rss" / "queries.xscl"


@pytest.fixture
def no_spark(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """``serve`` stops where it would start Spark; the spools it would read are listed."""
    import xscl.spark_plugin.serve as spark_serve

    started: list[Path] = []

    def start(request: Any) -> Any:
        started.append(request.spool)
        return spark_serve.JobReport(0)

    monkeypatch.setattr(spark_serve, "serve", start)
    return started


def _serve(home: Path, *more: str) -> int:
    return main(["serve", "--home", str(home), "--once", "--quiet", *more])


def test_serve_with_a_home_under_a_file_exits_1_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], no_spark: list[Path]
) -> None:
    home = _blocked(tmp_path) / "home"
    assert _serve(home, "--queries", str(RSS_QUERIES)) == 1
    assert _one_line(capsys.readouterr().err) == (
        f"xscl serve: cannot write --home {home}: {tmp_path / 'a_file'} is a file, not a "
        "directory; pass a --home you can write to"
    )
    assert no_spark == []


def test_serve_with_a_read_only_home_exits_1_in_one_line(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    no_spark: list[Path],
) -> None:
    """A home that was filled, then made read-only (simulated: root passes a chmod)."""
    home = tmp_path / "home"
    assert main(["subscribe", str(RSS_QUERIES), "--home", str(home)]) == 0
    capsys.readouterr()
    real_access = os.access
    monkeypatch.setattr(
        os, "access", lambda p, mode: False if Path(p) == home else real_access(p, mode)
    )
    assert _serve(home, "--queries", str(RSS_QUERIES)) == 1
    assert _one_line(capsys.readouterr().err) == (
        f"xscl serve: cannot write --home {home}: {home} is not writable (permissions or a "
        "read-only file system); pass a --home you can write to"
    )
    assert no_spark == []


def test_serve_with_an_unwritable_output_exits_1_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], no_spark: list[Path]
) -> None:
    out = _blocked(tmp_path) / "results.jsonl"
    assert _serve(tmp_path / "home", "--queries", str(RSS_QUERIES), "--output", str(out)) == 1
    assert _one_line(capsys.readouterr().err) == (
        f"xscl serve: cannot write --output {out}: {tmp_path / 'a_file'} is a file, not a "
        "directory; give --output a file path in a directory you can write to"
    )
    assert no_spark == []


@pytest.mark.parametrize("url", ["feeds/", "https://", "example.org/x"])
def test_serve_with_a_feed_base_url_that_is_not_a_url_exits_2(
    url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], no_spark: list[Path]
) -> None:
    assert _serve(tmp_path / "home", "--queries", str(RSS_QUERIES), "--feed-base-url", url) == 2
    assert _one_line(capsys.readouterr().err) == (
        f"xscl serve: --feed-base-url {url!r} is not an absolute URL; give where the feeds "
        "are served, e.g. https://example.org/xscl"
    )
    assert no_spark == []


@pytest.mark.parametrize("kind", ["missing", "not UTF-8"])
def test_serve_with_an_unreadable_queries_file_exits_2(
    kind: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], no_spark: list[Path]
) -> None:
    queries = tmp_path / "q.xscl"
    if kind == "not UTF-8":
        queries.write_bytes(b"Q1: S//a->x;\xff\n")
    assert _serve(tmp_path / "home", "--queries", str(queries)) == 2
    err = capsys.readouterr().err
    if kind == "missing":  # the path once (issue 36, defect 13)
        assert _one_line(err) == (
            f"xscl serve: cannot read --queries {queries}: No such file or directory"
        )
    else:  # as every command says it (issue 36, defect 8)
        assert err.splitlines()[0] == (
            f"{queries}:1:13: XSCL-P013 the file is not UTF-8 text: byte 0xFF (invalid start "
            "byte); save it as UTF-8 (expected: UTF-8 text)"
        )
    assert no_spark == [] and not (tmp_path / "home").exists()


def test_serve_with_an_empty_spool_says_how_to_fill_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], no_spark: list[Path]
) -> None:
    home = tmp_path / "home"
    assert _serve(home, "--queries", str(RSS_QUERIES)) == 0
    spool = home.resolve() / "spool"
    assert _one_line(capsys.readouterr().err) == (
        f"xscl serve: nothing in the spool {spool}: fill it with "
        f"`xscl poll --spool {spool} FEED...`"
    )
    assert no_spark == [spool]  # the job still starts: it waits for documents
    for stream, feed in (("vendor", "vendor.rss"), ("news", "news.atom")):
        feed_path = str(EXAMPLES / "rss" / "feeds" / feed)
        poll = ["poll", "--quiet", "--form", "raw", "--stream", stream, "--spool", str(spool)]
        assert main([*poll, feed_path]) == 0
    capsys.readouterr()
    # --queries again: the primary seeds the registry, after the lease (_start, stubbed)
    assert _serve(home, "--queries", str(RSS_QUERIES)) == 0
    assert capsys.readouterr().err == ""  # documents wait, the queries can match them


def test_serve_with_a_spool_that_is_a_file_exits_1_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], no_spark: list[Path]
) -> None:
    spool = _blocked(tmp_path)
    assert _serve(tmp_path / "home", "--queries", str(RSS_QUERIES), "--spool", str(spool)) == 1
    assert _one_line(capsys.readouterr().err) == (
        f"xscl serve: cannot read the spool {spool}: {spool / 'HEAD'}: Not a directory; give "
        "--spool the folder 'xscl poll --spool' fills"
    )
    assert no_spark == []


# -- run --engine spark: dead letters name the file's line (without Spark) -------------


def test_spark_batch_numbers_dead_letters_by_file_line(tmp_path: Path) -> None:
    from xscl.connectors.spool import Spool
    from xscl.spark_plugin.batch import spool_input

    good = (EXAMPLES / "thesis" / "documents.jsonl").read_text(encoding="utf-8").splitlines()
    lines = [
        good[0],  # line 1 -> offset 0
        "",  # line 2: blank, skipped but counted
        "not json",  # line 3
        good[1],  # line 4 -> offset 1
        good[0],  # line 5: a repeated (stream, docid), dropped by the spool
        '{"stream": "S", "docid": "z"}',  # line 6: fields missing
    ]
    docs = tmp_path / "docs.jsonl"
    docs.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with Spool(tmp_path / "spool", sync=False) as spool:
        spooled = spool_input(docs, spool)
    assert [(line, json.loads(text)["line"]) for line, text in spooled.dead] == [(3, 3), (6, 6)]
    assert spooled.line_of_offset == {0: 1, 1: 4}
    assert spooled.dropped == 1


COMMANDS = ["check", "explain", "run", "poll", "serve", "subscribe", "unsubscribe", "subscriptions"]


@pytest.mark.parametrize("command", COMMANDS)
def test_every_option_in_help_says_what_it_does(
    command: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Each option of the command's parser has a description (``serve`` had bare ones)."""
    import argparse

    from xscl.cli.main import build_parser

    parser = build_parser()
    (sub,) = (a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    actions = [a for a in sub.choices[command]._actions if a.option_strings]
    assert actions
    bare = [a.option_strings[0] for a in actions if not a.help or a.help == argparse.SUPPRESS]
    assert bare == []
    with pytest.raises(SystemExit) as done:
        main([command, "--help"])
    assert done.value.code == 0
    shown = capsys.readouterr().out
    assert all(action.option_strings[-1] in shown for action in actions)


def test_serve_reports_bad_cel_queries_before_spark(
    tmp_path: Path, no_spark: list[Path], capsys: pytest.CaptureFixture[str]
) -> None:
    """A CEL file with errors: every error with its code, exit 2, Spark never started."""
    bad = tmp_path / "bad.cel"
    bad.write_text("x: FROM same_author_pairs NEXT{$2.nope = $1.a} same_author_pairs")
    queries = Path(__file__).resolve().parents[2] / "examples" / "cel" / "crosspost.xscl"
    home = tmp_path / "home"
    code = _serve(home, "--queries", str(queries), "--cel-queries", str(bad))
    err = capsys.readouterr().err
    assert code == 2 and not no_spark
    assert "CEL-V001" in err and "Traceback" not in err


def test_serve_runs_the_valid_cel_queries_and_exits_2(
    tmp_path: Path, no_spark: list[Path], capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 38: a CEL file with a bad query among good ones: the bad one's coded error,
    the job runs with the others (the file's valid queries seed the job's CEL registry,
    which the executors run), and ends with exit 2."""
    from xscl.cli.common import load_queries
    from xscl.events.from_xscl import xscl_catalog
    from xscl.service.cel_subscriptions import CelSubscriptionLog

    examples = Path(__file__).resolve().parents[2] / "examples" / "cel"
    mixed = tmp_path / "mixed.cel"
    bad = "x: FROM same_author_pairs NEXT{$2.nope = $1.a} same_author_pairs"
    text = (examples / "crosspost.cel").read_text() + ";\n" + bad
    mixed.write_text(text)
    queries = examples / "crosspost.xscl"
    code = _serve(tmp_path / "home", "--queries", str(queries), "--cel-queries", str(mixed))
    err = capsys.readouterr().err
    assert code == 2 and no_spark, err
    assert f"{mixed}:x:9:32: CEL-V001 unknown attribute $2.nope" in err
    assert "Traceback" not in err
    assert "the other 2 run" in err
    catalog = xscl_catalog(list(load_queries(str(queries)).queries))
    seeded, errors = CelSubscriptionLog(tmp_path / "registry", catalog).subscribe(
        text, source=str(mixed)
    )
    assert seeded is not None and list(seeded.ids) == ["three_posts", "runs"]
    assert [e.code for e in errors] == ["CEL-V001"]


# -- a failure of the XPath library is a coded error of one query ----------------------

_LIBRARY_FAILS = "Q1: S/d[true()];\nBAD: S/d[count(empty-sequence()) >= 0];\nQ3: S/d;\n"


def test_check_turns_a_library_failure_into_v009_of_that_query(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 36 defect 2: elementpath recurses without end on ``empty-sequence()``."""
    assert main(["check", str(_queries(tmp_path, _LIBRARY_FAILS))]) == 2
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    assert "BAD:2:7: XSCL-V009 invalid XPath function predicate" in err
    assert "RecursionError" in err
    assert out.strip() == "2 valid, 1 invalid (3 checked)"


@pytest.mark.parametrize("engine", ["local", "reference"])
def test_run_turns_a_library_failure_into_v009(
    engine: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    docs = tmp_path / "d.jsonl"
    docs.write_text('{"stream": "S", "docid": "d1", "ts": 0, "xml": "<d/>"}\n')
    queries = _queries(tmp_path, _LIBRARY_FAILS)
    out = tmp_path / "out.jsonl"
    argv = ["run", "--engine", engine, "--queries", str(queries), "--input", str(docs)]
    assert main([*argv, "--output", str(out)]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and "XSCL-V009" in err
    assert not out.exists()


# -- a query file that is not UTF-8 ------------------------------------------------------

_NOT_UTF8 = b"Q1: S//a;\nQ2: S//a[. = 'caf\xe9'];\n"


@pytest.mark.parametrize(
    ("argv", "code"),
    [
        (["check", "{q}"], "XSCL-P013"),
        (["run", "--queries", "{q}", "--input", "{d}", "--output", "{o}"], "XSCL-P013"),
        (["explain", "{q}"], "XSCL-P013"),
        (["explain", "--sharing", "{q}"], "XSCL-P013"),
        (["subscribe", "{q}", "--home", "{h}"], "XSCL-P013"),
        (["cel", "check", "{q}"], "CEL-P012"),
        (["cel", "explain", "{q}"], "CEL-P012"),
        (["cel", "run", "--queries", "{q}", "--input", "{d}", "--output", "{o}"], "CEL-P012"),
    ],
    ids=lambda v: "-".join(a for a in v if a[0] not in "{-") if isinstance(v, list) else v,
)
def test_a_query_file_that_is_not_utf8_is_one_coded_error(
    argv: list[str], code: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 36 defect 8: a traceback and exit 1 before; now the code, the line and
    column of the first bad byte, and exit 2."""
    queries = tmp_path / "q.txt"
    queries.write_bytes(_NOT_UTF8)
    docs = tmp_path / "d.jsonl"
    docs.write_text("")
    paths = {"q": queries, "d": docs, "o": tmp_path / "o.jsonl", "h": tmp_path / "home"}
    assert main([a.format(**paths) for a in argv]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert err.splitlines()[0] == (
        f"{queries}:2:18: {code} the file is not UTF-8 text: byte 0xE9 (invalid continuation "
        "byte); save it as UTF-8 (expected: UTF-8 text)"
    )
    assert not (tmp_path / "o.jsonl").exists()


def test_a_missing_query_file_is_named_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 36 defect 13: ``cannot read nope.xscl: nope.xscl: ...`` repeated the path."""
    missing = str(tmp_path / "nope.xscl")
    for argv in (["explain", "--sharing", missing], ["check", missing]):
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert _one_line(err).endswith(f"cannot read {missing}: No such file or directory")


@pytest.mark.parametrize(
    ("argv", "usage", "unknown"),
    [(["check", "--frobnicate", "q.xscl"], "usage: xscl check ", "--frobnicate"),
     (["cel", "check", "--frob", "q.cel"], "usage: xscl cel check ", "--frob"),
     (["--frob"], "usage: xscl [-h]", "--frob")],
)  # fmt: skip
def test_an_unknown_option_shows_the_commands_own_usage(
    argv: list[str], usage: str, unknown: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 36, defect 13: ``xscl check --frobnicate`` printed the top-level usage."""
    with pytest.raises(SystemExit) as stopped:
        main(argv)
    assert stopped.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith(usage)
    assert err.rstrip().endswith(f"error: unrecognized arguments: {unknown}")


def test_check_lists_errors_in_the_order_of_the_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 36, defect 13: syntax errors came first, then validation errors."""
    text = "Q1: S//a->x JOIN {x=y, 1h} T//b;\nQ2: S//c[;\nQ3: S//d->z JOIN {z=w, 1h} T//b;\n"
    assert main(["check", str(_queries(tmp_path, text))]) == 2
    codes = [ln.split(": ")[1].split()[0] for ln in capsys.readouterr().err.splitlines()
             if "XSCL-" in ln]  # fmt: skip
    assert codes == ["XSCL-V001", "XSCL-P004", "XSCL-V001"]


# -- cel publish / api token create: a --home that cannot be written ----------------------


def test_cel_publish_to_a_home_under_a_file_names_the_home(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    home = _blocked(tmp_path) / "home"
    events = tmp_path / "events.jsonl"
    events.write_text('{"stream": "S", "start": 1, "end": 1, "attrs": {}}\n', encoding="utf-8")
    assert main(["cel", "publish", str(events), "--home", str(home)]) == 1
    line = _one_line(capsys.readouterr().err)
    assert line.startswith(f"xscl cel publish: cannot add {events} to the job's events ")
    assert f"under --home {home}: {tmp_path / 'a_file'} is a file, not a directory;" in line


def test_api_token_create_that_cannot_write_says_where(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A home under a regular file, and a tokens file on a read-only file system
    (simulated: writing it fails with EROFS): one line each, the path and the advice."""
    import xscl.connectors.durable as durable

    home = _blocked(tmp_path) / "home"
    assert main(["api", "token", "create", "alice", "--home", str(home)]) == 1
    line = _one_line(capsys.readouterr().err)
    assert line.startswith("xscl api token create: cannot write the tokens file ")
    assert "is a file, not a directory; give --home (or --tokens)" in line

    def read_only(path: Path, data: bytes) -> None:
        raise OSError(errno.EROFS, "Read-only file system", str(path))

    monkeypatch.setattr(durable, "write_synced", read_only)
    tokens = tmp_path / "api" / "tokens.json"
    assert main(["api", "token", "create", "alice", "--home", str(tmp_path)]) == 1
    line = _one_line(capsys.readouterr().err)
    assert line == (
        f"xscl api token create: XSCL-A008 cannot write the tokens file {tokens}: "
        "Read-only file system; give --home (or --tokens) a place you can write to"
    )
