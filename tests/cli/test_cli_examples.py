"""The examples of ``--help`` and of the README, run as written, in a fresh folder.

Issue 36, defect 12: the example of ``xscl serve --help`` polled without ``--form raw``
and the README's CEL section polled into the stream ``feeds``, so the queries they
served could never match and gave 0 results without a word. Each example here runs
from a folder holding only ``examples/`` (the repository's), with ``/tmp/`` standing
for a temporary folder; ``xscl serve`` stops where it would start Spark (the Spark
suites run the job itself), after its warnings about queries that cannot match what
was polled, of which there must be none. What is not run says why.
"""

from __future__ import annotations

import argparse
import re
import shlex
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from xscl.cli.main import build_parser, main
from xscl.cli.unmatched import spool_names, unmatched
from xscl.lang.parser import parse_queries

ROOT = Path(__file__).resolve().parents[2]

#: Example commands not run here, and why.
NOT_RUN = {
    "https://": "needs the network",
    "explain --sharing --home": "runs on Spark (tests/cli/test_cli_explain_sharing.py)",
    "status --home": "needs a job that ran (tests/pair/test_pair_epochs.py)",
}


_EXAMPLE = re.compile(r"^(?:example: |\s+)(xscl .*)$", re.M)


def _help_examples() -> Iterator[tuple[str, list[str]]]:
    """(command, its example command lines) for every command with an example."""

    def walk(parser: argparse.ArgumentParser, path: str) -> Iterator[tuple[str, list[str]]]:
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, sub in action.choices.items():
                    found = _EXAMPLE.findall(sub.epilog or "")
                    if found:
                        yield f"{path} {name}".strip(), found
                    yield from walk(sub, f"{path} {name}")

    yield from walk(build_parser(), "")


@pytest.fixture
def folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh working folder with the repository's examples; serve never starts Spark."""
    import xscl.spark_plugin.serve as spark_serve

    def start(*_args: Any, **_kwargs: Any) -> Any:
        return spark_serve.JobReport(0)

    monkeypatch.setattr(spark_serve, "serve", start)
    work = tmp_path / "work"
    work.mkdir()
    (work / "examples").symlink_to(ROOT / "examples")
    monkeypatch.chdir(work)
    return work


def _run(line: str, tmp: Path, capsys: pytest.CaptureFixture[str]) -> str:
    """Run one example command line; its exit code must be 0 and it must warn of nothing."""
    argv = shlex.split(line.replace("/tmp/", f"{tmp}/"))
    assert argv[0] == "xscl"
    code = main(argv[1:])
    err = capsys.readouterr().err
    assert code == 0, f"{line}: exit {code}\n{err}"
    assert "warning:" not in err, f"{line}:\n{err}"
    assert "Traceback" not in err
    return err


@pytest.mark.parametrize(("command", "lines"), list(_help_examples()), ids=lambda v: str(v))
def test_every_help_example_runs_as_written(
    command: str, lines: list[str], folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    skipped = [why for line in lines for marker, why in NOT_RUN.items() if marker in line]
    for line in lines:
        if not any(marker in line for marker in NOT_RUN):
            _run(line, folder.parent, capsys)
    if len(skipped) == len(lines):
        pytest.skip(f"xscl {command}: {'; '.join(skipped)}")


def _readme_commands(section: str) -> list[str]:
    """The ``xscl`` command lines of the README's fenced blocks under ``section``,
    continuation lines joined and ``# comments`` dropped."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    body = text.split(f"## {section}", 1)[1].split("\n## ", 1)[0]
    commands: list[str] = []
    for block in re.findall(r"```bash\n(.*?)```", body, re.S):
        joined = re.sub(r"\\\n\s*", " ", block)
        commands += [ln.split("  #", 1)[0].strip() for ln in joined.splitlines()]
    return [c for c in commands if c.startswith("xscl ")]


#: README commands not run here, and why (matched on the start of the command).
README_NOT_RUN = {
    "xscl run --engine reference ...": "'...' stands for the options above it",
    "xscl cel run --engine reference ...": "'...' stands for the options above it",
    "xscl cel run --reorder-slack 30s ...": "'...' stands for the options above it",
    "xscl subscribe more.xscl": "more.xscl stands for the user's own file",
    "xscl cel publish more-events.jsonl": "more-events.jsonl stands for the user's own file",
    "xscl unsubscribe": "needs the job's registry, which serve fills on Spark",
    "xscl subscriptions": "needs the job's registry, which serve fills on Spark",
    "xscl explain --sharing --home": "runs on Spark (tests/cli/test_cli_explain_sharing.py)",
    "xscl cel run --engine spark": "runs on Spark (tests/spark/test_spark_cel.py)",
}


def _as_run_here(command: str) -> str:
    """A README command as run here: a feed for ``FEED_URL...`` (the example RSS feed,
    whose items have a dc:creator), no optional ``[...]`` part, ``serve`` once."""
    command = command.replace("FEED_URL...", "examples/rss/feeds/vendor.rss")
    command = re.sub(r" \[[^\]]*\]", "", command)
    if command.startswith("xscl serve ") and "--once" not in command:
        command += " --once"
    return command


@pytest.mark.parametrize("section", ["Using it", "Event patterns: CEL"])
def test_the_readme_commands_run_as_written(
    section: str, folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """In order: the polls feed the serve after them what its queries read (the issue's
    two cases: 0 results, no warning), and every other command runs."""
    commands = _readme_commands(section)
    ran = [c for c in commands if not any(c.startswith(skip) for skip in README_NOT_RUN)]
    for command in ran:
        _run(_as_run_here(command), folder.parent, capsys)
    assert any(c.startswith("xscl poll ") for c in ran)
    assert any(c.startswith("xscl serve ") for c in ran)


# -- the warnings themselves -------------------------------------------------------------


def _poll(spool: Path, *args: str) -> None:
    feeds = ROOT / "examples" / "rss" / "feeds"
    assert main(["poll", "--spool", str(spool), *args, str(feeds / "news.atom")]) == 0


def test_queries_that_cannot_match_the_spool_are_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spool = tmp_path / "spool"
    _poll(spool, "--stream", "news")  # normalized: every document is one <item>
    capsys.readouterr()
    queries = parse_queries(
        "raw: news/entry[./author/name->a] JOIN {a = b, 1d} news/entry[./author/name->b];"
        "other: vendor/item;"
        "fine: news/item[./title];"
        "pub: news/item->i PUBLISH seen;"
        "reads_pub: seen/result;"
    )
    lines = unmatched(queries, spool_names(spool))
    assert lines == [
        "raw reads stream 'news', but none of its 3 newest documents has an element 'entry', "
        "an element 'name' (they were polled in the normalized form, one <item> with title, "
        "link, author...: poll with --form raw to keep the feed's own elements)",
        "other reads stream 'vendor', but none of the spool's 3 newest documents is of it "
        "(streams there: news); poll it with --stream vendor",
    ]
    _poll(tmp_path / "raw", "--stream", "news", "--form", "raw")
    assert unmatched(queries[:1], spool_names(tmp_path / "raw")) == []


def test_subscribe_and_serve_warn_in_one_line_each(
    folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _poll(folder / "xscl-data" / "spool", "--stream", "news")
    queries = folder / "q.xscl"
    queries.write_text("raw: news/entry;\nfine: news/item;\n", encoding="utf-8")
    capsys.readouterr()
    assert main(["subscribe", str(queries), "--home", "xscl-data"]) == 0
    warned = capsys.readouterr().err.splitlines()
    assert len(warned) == 1 and warned[0].startswith(
        "xscl subscribe: warning: raw reads stream 'news', but none of its 3 newest "
        "documents has an element 'entry'"
    )
    assert main(["serve", "--queries", str(queries), "--home", "fresh", "--spool",
                 "xscl-data/spool", "--once"]) == 0  # fmt: skip
    err = capsys.readouterr().err
    assert [ln for ln in err.splitlines() if "warning:" in ln] == [
        warned[0].replace("xscl subscribe:", "xscl serve:")
    ]
