"""The main job on the embedded default: the shipped examples, end to end.

``bash scripts/bootstrap.sh demo`` runs ``python -m xscl.demo``:

1. the streaming job: ``xscl poll`` ingests the example RSS and Atom feeds
   (``examples/rss/feeds``, raw item form) into a durable spool under
   ``--home``, then ``xscl serve --once`` runs the queries over it as a Spark
   Structured Streaming job in local mode, writing results and one Atom feed
   per query. Run it again and it resumes from its checkpoint (nothing new);
2. the batch command: ``xscl run`` over each example's ``documents.jsonl``.

Every result set is checked against the brute-force reference evaluator (the
oracle) and the hand-checked ``expected-results.jsonl``.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

from xscl.cli.main import main as xscl_main

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def _result_keys(path: Path) -> set[tuple[str, str]]:
    with path.open(encoding="utf-8") as lines:
        return {(r["query"], r["result_id"]) for r in map(json.loads, lines)}


def _show(path: Path) -> None:
    with path.open(encoding="utf-8") as lines:
        for record in map(json.loads, lines):
            docs = " -> ".join(f"{d['stream']}:{d['docid']}@{d['ts']}" for d in record["docs"])
            values = ", ".join(f"{k}={v!r}" for k, v in sorted(record["values"].items()))
            print(f"  {record['query']:<20} {docs}")
            if values:
                print(f"  {'':<20} {values}")


def run_example(folder: Path, engine: str, workdir: Path) -> bool:
    """Run one example with ``engine`` and the reference; True when all agree."""
    queries, documents = folder / "queries.xscl", folder / "documents.jsonl"
    outputs = {}
    for name in (engine, "reference"):
        out = workdir / f"{folder.name}-{name}.jsonl"
        code = xscl_main(
            ["run", "--engine", name, "--queries", str(queries),
             "--input", str(documents), "--output", str(out)]
        )
        if code != 0:
            print(f"xscl demo: {name} engine failed on {folder.name} (exit {code})")
            return False
        outputs[name] = _result_keys(out)
    print(f"\n== {folder.name}: {len(outputs[engine])} results ({engine} engine)")
    _show(workdir / f"{folder.name}-{engine}.jsonl")
    agree = outputs[engine] == outputs["reference"]
    expected_file = folder / "expected-results.jsonl"
    if expected_file.exists():
        agree = agree and outputs[engine] == _result_keys(expected_file)
    print(f"  {'matches' if agree else 'DIFFERS FROM'} the reference evaluator"
          f"{' and expected-results.jsonl' if expected_file.exists() else ''}")
    return agree


def run_streaming(folder: Path, home: Path) -> bool:
    """Poll the example feeds into a spool and run the Spark job over it once."""
    feeds = {"vendor": folder / "feeds" / "vendor.rss", "news": folder / "feeds" / "news.atom"}
    spool = home / "spool"
    for stream, feed in feeds.items():
        code = xscl_main(["poll", "--quiet", "--form", "raw", "--spool", str(spool),
                          "--stream", stream, str(feed)])
        if code != 0:
            print(f"xscl demo: polling {feed} failed (exit {code})")
            return False
    out = home / "results.jsonl"
    print(f"\n== streaming job (Spark local mode) over {spool}")
    code = xscl_main(["serve", "--queries", str(folder / "queries.xscl"), "--home", str(home),
                      "--spool", str(spool), "--once", "--output", str(out)])
    if code != 0:
        print(f"xscl demo: the streaming job failed (exit {code})")
        return False
    _show(out)
    agree = _result_keys(out) == _result_keys(folder / "expected-results.jsonl")
    print(f"  {'matches' if agree else 'DIFFERS FROM'} expected-results.jsonl")
    feeds_dir = home / "results" / "xscl" / "feeds"
    print(f"  follow a subscription in any feed reader: {feeds_dir}/<query>.atom")
    for feed in sorted(feeds_dir.glob("*.atom")):
        print(f"    {feed}")
    return agree


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m xscl.demo",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--examples", type=Path, default=EXAMPLES)
    parser.add_argument("--engine", default="local", choices=["local", "reference"],
                        help="engine for the batch part (default: local)")
    parser.add_argument("--home", type=Path, default=Path("xscl-data") / "demo",
                        help="spool, checkpoints and results of the streaming job "
                             "(default: %(default)s)")
    parser.add_argument("--no-spark", action="store_true",
                        help="skip the streaming job (batch engines only)")
    args = parser.parse_args(argv)
    folders = sorted(p.parent for p in args.examples.glob("*/queries.xscl"))
    if not folders:
        print(f"xscl demo: no examples under {args.examples}", file=sys.stderr)
        return 2
    ok = True
    if not args.no_spark:
        ok = run_streaming(args.examples / "rss", args.home)
    with tempfile.TemporaryDirectory(prefix="xscl-demo-") as tmp:
        ok = all([run_example(folder, args.engine, Path(tmp)) for folder in folders]) and ok
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
