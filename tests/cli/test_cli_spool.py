"""``xscl spool ls|cat|compact``: per stream counts, offsets and time ranges, the retained
range; the documents as JSON Lines envelopes, filtered by stream, time and offset;
``xscl poll --retention`` and ``xscl spool compact`` dropping the old documents."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from xscl.cli.main import main
from xscl.connectors.document import Document, parse_ts
from xscl.connectors.spool import Spool, SpoolReader


@pytest.fixture
def spool(tmp_path: Path) -> Path:
    folder = tmp_path / "spool"
    docs = [
        Document("news", "n1", parse_ts("2026-01-01T10:00:00Z"), "<entry>k</entry>"),
        Document("vendor", "v1", parse_ts("2026-01-01T09:00:00Z"), "<item>1</item>"),
        Document("news", "n2", parse_ts("2026-01-02T10:00:00Z"), "<entry>k</entry>"),
        Document("news", "n3", parse_ts("2026-01-01T08:00:00Z"), "<entry>k</entry>"),
    ]
    with Spool(folder, sync=False) as writer:
        writer.append(docs)
    return folder


def test_ls_summarizes_each_stream(spool: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["spool", "ls", str(spool), "--json"]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert rows == [
        {
            "stream": "news",
            "documents": 3,
            "offsets": [0, 3],
            "oldest": "2026-01-01T08:00:00Z",
            "newest": "2026-01-02T10:00:00Z",
        },
        {
            "stream": "vendor",
            "documents": 1,
            "offsets": [1, 1],
            "oldest": "2026-01-01T09:00:00Z",
            "newest": "2026-01-01T09:00:00Z",
        },
        {"retained": [0, 3]},
    ]
    assert main(["spool", "ls", str(spool)]) == 0
    out, err = capsys.readouterr()
    assert out.startswith("news\t3 documents\toffsets 0..3\t") and "2 stream(s), 4" in err


def test_cat_prints_envelopes(spool: Path, capsys: pytest.CaptureFixture[str]) -> None:
    def cat(*options: str) -> list[str]:
        assert main(["spool", "cat", str(spool), *options]) == 0
        return [json.loads(line)["docid"] for line in capsys.readouterr().out.splitlines()]

    assert cat() == ["n1", "v1", "n2", "n3"]
    assert cat("--stream", "news", "--since", "2026-01-01T09:30:00Z") == ["n1", "n2"]
    assert cat("--from", "2", "--limit", "1") == ["n2"]
    assert cat("--stream", "vendor", "--stream", "news", "--limit", "2") == ["n1", "v1"]


def test_bad_input_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["spool", "ls", str(tmp_path / "none")]) == 2
    assert main(["spool", "cat", str(tmp_path), "--since", "soon"]) == 2
    err = capsys.readouterr().err
    assert "is not a spool directory" in err and "XSCL-C003" in err and "Traceback" not in err


def test_run_over_the_spool_history_equals_run_over_its_envelopes(
    spool: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``xscl run --spool DIR [--since TS]``: the same results as over the envelopes that
    ``xscl spool cat`` prints, for the engine and the reference."""
    queries = tmp_path / "q.xscl"
    queries.write_text("Q1: news//entry->x FOLLOWED BY {x = y, 2d} news//entry->y;\n")
    since = "2026-01-01T09:00:00Z"
    assert main(["spool", "cat", str(spool), "--since", since]) == 0
    envelopes = tmp_path / "docs.jsonl"
    envelopes.write_text(capsys.readouterr().out)

    def results(*source: str, engine: str = "local") -> list[str]:
        output = tmp_path / f"out-{engine}-{len(source)}.jsonl"
        options = ["--queries", str(queries), "--output", str(output), "--engine", engine]
        assert main(["run", *options, *source]) == 0
        return sorted(json.loads(line)["result_id"] for line in output.read_text().splitlines())

    from_spool = results("--spool", str(spool), "--since", since)
    assert from_spool == results("--input", str(envelopes))
    assert from_spool == results("--spool", str(spool), "--since", since, engine="reference")
    assert len(from_spool) == 1  # n1 then n2 (n3 is before --since)
    assert len(results("--spool", str(spool))) == 3
    assert (
        main(["run", "--queries", str(queries), "--output", "x", "--input", "a", "--since", since])
        == 2
    )


def test_retention_by_poll_and_compact_and_the_retained_range(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "spool"
    day = 86_400 * 1_000_000
    with Spool(folder, segment_bytes=300, sync=False) as writer:
        writer.append([Document("s", f"d{i}", i * day, f"<d>{i}</d>") for i in range(20)])
    with pytest.raises(SystemExit):  # argparse: exit 2 and the usage
        main(["spool", "compact", str(folder), "--retention", "0"])
    assert "must be positive" in capsys.readouterr().err
    assert main(["spool", "compact", str(folder), "--retention", "5d"]) == 0
    out = capsys.readouterr().out
    first = int(out.rsplit("retained offsets ", 1)[1].split("..")[0])
    assert first == 14 and out.startswith("dropped 14 documents")  # the clock at day 14 on
    assert main(["spool", "ls", str(folder)]) == 0
    err = capsys.readouterr().err
    assert f"retained offsets {first}..19 ({first} older dropped by retention)" in err
    assert main(["spool", "cat", str(folder)]) == 0
    cat = [json.loads(line)["docid"] for line in capsys.readouterr().out.splitlines()]
    assert cat == [f"d{i}" for i in range(first, 20)]
    # xscl poll --retention compacts after its pass: a document of today (the file's time)
    # moves the clock on, and every sealed segment is older than an hour before it
    (tmp_path / "new.xml").write_text("<d>new</d>")
    poll = ["poll", "--xml", "--spool", str(folder), "--stream", "s", "--retention", "1h"]
    assert main([*poll, str(tmp_path / "new.xml")]) == 0
    assert "retention: dropped" in capsys.readouterr().out
    (active,) = folder.glob("*.active")
    assert SpoolReader(folder).first_offset() == int(active.name.split(".")[0]) > first
