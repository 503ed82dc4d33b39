"""``xscl spool ls|cat``: what a durable spool holds.

``ls`` prints, per stream, how many documents the spool holds, their offsets and the
range of their timestamps, and the retained range of offsets; ``cat`` prints the
documents as JSON Lines envelopes (the form ``xscl run --input`` reads), optionally of
one stream, from a time or an offset. Both read only committed records
(``connectors.spool.SpoolReader``, no lock), so they run beside ``xscl poll`` and
``xscl serve``. ``compact --retention D`` drops the records older than the retention
(``connectors.retention``); it takes the writer's lock, so it runs when ``xscl poll``
does not (``xscl poll --retention D`` compacts after every pass).

Exit codes: 0 done; 2 a bad option or no spool at the path; 1 the spool cannot be read
(or, for ``compact``, written: another writer holds it).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from xscl.connectors.document import Document, envelope_line, format_ts, parse_ts
from xscl.errors import XsclError


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    spool = subparsers.add_parser(
        "spool",
        help="show what a durable spool holds (per stream and time range), or print it",
        description="Show what a durable spool holds, or print its documents.",
    )
    commands = spool.add_subparsers(dest="spool_command", metavar="ls|cat", required=True)
    ls = commands.add_parser(
        "ls",
        help="per stream: documents, offsets, oldest and newest ts",
        epilog="for example:\n  $ xscl spool ls xscl-data/spool",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    ls.add_argument("spool", metavar="SPOOL")
    ls.add_argument("--json", action="store_true", help="one JSON object per stream")
    ls.set_defaults(func=run_ls)
    cat = commands.add_parser(
        "cat",
        help="print the documents as JSON Lines envelopes (what xscl run --input reads)",
        epilog=(
            "for example:\n"
            "  $ xscl spool cat xscl-data/spool --stream news --since 2026-01-01T00:00:00Z"
        ),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    cat.add_argument("spool", metavar="SPOOL")
    cat.add_argument("--stream", action="append", help="only this stream (repeatable)")
    cat.add_argument("--since", metavar="TS", help="only documents with ts at or after TS")
    cat.add_argument("--from", dest="start", type=int, default=0, metavar="OFFSET")
    cat.add_argument("--limit", type=int, metavar="N", help="at most N documents")
    cat.set_defaults(func=run_cat)
    compact = commands.add_parser(
        "compact",
        help="drop the documents older than --retention (the writer's lock is needed)",
        epilog="for example:\n  $ xscl spool compact xscl-data/spool --retention 30d",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    compact.add_argument("spool", metavar="SPOOL")
    add_retention_option(compact, required=True)
    compact.set_defaults(func=run_compact)


def add_retention_option(parser: argparse.ArgumentParser, *, required: bool = False) -> None:
    """``--retention D``: keep what arrived while the spool's clock was within D of its
    newest timestamp (docs/architecture.md, "Connectors and the durable spool")."""
    from xscl.cli.common import positive_duration_argument

    parser.add_argument(
        "--retention",
        type=positive_duration_argument,
        required=required,
        metavar="D",
        help=(
            "keep the documents that arrived while the spool's newest timestamp was within D "
            "of its newest now (e.g. 30d); older sealed segments are compacted away"
        ),
    )


@dataclass
class StreamSummary:
    """What ``ls`` prints of one stream."""

    stream: str
    documents: int
    first_offset: int
    last_offset: int
    oldest: int
    newest: int

    def to_dict(self) -> dict[str, object]:
        return {
            "stream": self.stream,
            "documents": self.documents,
            "offsets": [self.first_offset, self.last_offset],
            "oldest": format_ts(self.oldest),
            "newest": format_ts(self.newest),
        }


def _records(spool: Path, start: int = 0) -> Iterator[tuple[int, Document]]:
    """The retained records from offset ``start`` on."""
    from xscl.connectors.spool import SpoolReader

    reader = SpoolReader(spool)
    yield from reader.iter_range(max(start, reader.first_offset()), reader.next_offset())


def retained_range(spool: Path) -> tuple[int, int]:
    """The first retained offset and the next offset of the spool."""
    from xscl.connectors.spool import SpoolReader

    reader = SpoolReader(spool)
    return reader.first_offset(), reader.next_offset()


def summarize(spool: Path) -> list[StreamSummary]:
    """Per stream, in name order."""
    streams: dict[str, StreamSummary] = {}
    for offset, doc in _records(spool):
        known = streams.get(doc.stream)
        if known is None:
            streams[doc.stream] = StreamSummary(
                doc.stream, 1, offset, offset, doc.ts_micros, doc.ts_micros
            )
            continue
        known.documents += 1
        known.last_offset = offset
        known.oldest = min(known.oldest, doc.ts_micros)
        known.newest = max(known.newest, doc.ts_micros)
    return [streams[name] for name in sorted(streams)]


def selected(
    spool: Path, *, streams: set[str] | None = None, since: int | None = None, start: int = 0
) -> Iterator[Document]:
    """The spool's committed documents from offset ``start`` in offset order (= arrival
    order), of ``streams`` (None: all) with ts at or after ``since`` (None: any)."""
    for _offset, doc in _records(spool, start):
        if (streams and doc.stream not in streams) or (since is not None and doc.ts_micros < since):
            continue
        yield doc


def write_envelopes(spool: Path, target: Path, since: int | None = None) -> int:
    """The spool's documents (ts at or after ``since``) as a JSON Lines envelope file, in
    arrival order (what ``xscl run --spool`` evaluates); how many."""
    count = 0
    with open(target, "w", encoding="utf-8") as handle:
        for doc in selected(spool, since=since):
            handle.write(envelope_line(doc) + "\n")
            count += 1
    return count


def _no_spool(command: str, spool: Path) -> bool:
    if spool.is_dir():
        return False
    print(
        f"xscl spool {command}: {spool} is not a spool directory "
        "(fill one with 'xscl poll --spool DIR FEED...')",
        file=sys.stderr,
    )
    return True


def run_ls(args: argparse.Namespace) -> int:
    spool = Path(args.spool)
    if _no_spool("ls", spool):
        return 2
    try:
        summary = summarize(spool)
        first, end = retained_range(spool)
    except (OSError, XsclError) as exc:
        print(f"xscl spool ls: cannot read {spool}: {exc}", file=sys.stderr)
        return 1
    for row in summary:
        if args.json:
            print(json.dumps(row.to_dict()))
        else:
            print(
                f"{row.stream}\t{row.documents} documents\toffsets {row.first_offset}.."
                f"{row.last_offset}\t{format_ts(row.oldest)} .. {format_ts(row.newest)}"
            )
    if args.json:
        print(json.dumps({"retained": [first, end - 1]}))
    else:
        total = sum(row.documents for row in summary)
        dropped = f" ({first} older dropped by retention)" if first else ""
        print(
            f"{len(summary)} stream(s), {total} documents; retained offsets {first}..{end - 1}"
            f"{dropped}",
            file=sys.stderr,
        )
    return 0


def run_compact(args: argparse.Namespace) -> int:
    from xscl.connectors.spool import Spool

    spool = Path(args.spool)
    if _no_spool("compact", spool):
        return 2
    try:
        with Spool(spool) as writer:
            done = writer.compact(args.retention)
            end = writer.next_offset()
    except (OSError, XsclError) as exc:
        print(f"xscl spool compact: {exc}", file=sys.stderr)
        return 1
    print(
        f"dropped {done.dropped} documents ({done.removed_segments} segment(s) removed); "
        f"retained offsets {done.first}..{end - 1}"
    )
    return 0


def run_cat(args: argparse.Namespace) -> int:
    spool = Path(args.spool)
    if _no_spool("cat", spool):
        return 2
    if args.start < 0 or (args.limit is not None and args.limit < 0):
        print("xscl spool cat: --from and --limit must not be negative", file=sys.stderr)
        return 2
    since = None
    if args.since is not None:
        try:
            since = parse_ts(args.since)
        except XsclError as exc:
            print(f"xscl spool cat: --since: {exc}", file=sys.stderr)
            return 2
    printed = 0
    try:
        for doc in selected(spool, streams=set(args.stream or ()), since=since, start=args.start):
            if args.limit is not None and printed >= args.limit:
                break
            print(envelope_line(doc))
            printed += 1
    except (OSError, XsclError) as exc:
        print(f"xscl spool cat: cannot read {spool}: {exc}", file=sys.stderr)
        return 1
    return 0
