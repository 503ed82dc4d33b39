"""``xscl poll FEEDS...``: poll RSS/Atom feeds (files, directories, URLs) into the spool.

With ``--xml`` the arguments are XML files and folders of them instead, one document
per file or per ``--record`` element (``connectors.xmlfiles``), read once.

Prints a progress line on stderr (feeds done/total, items new/duplicate, errors) and
a summary at the end of each pass on stdout. Feed errors are reported and counted,
never fatal to the pass: exit 0 when some feed could be read (how many failed is
said on stderr), 1 when none could (every feed failed, or no feed was found) or
when the spool, its state or dead-letter file cannot be used (locked by another
writer, not writable: said in one line), 2 on a usage error.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path

from xscl.cli.common import os_error_reason, unwritable_file, unwritable_folder
from xscl.cli.spool import add_retention_option
from xscl.connectors.dead_letters import DeadLetter
from xscl.connectors.document import STREAM_NAME, Document
from xscl.connectors.feeds import FORMS
from xscl.connectors.fetch import FeedStateStore, Fetcher, FetchPolicy
from xscl.connectors.poller import FEED_SUFFIXES, Poller, PollSummary, expand_feed_sources
from xscl.connectors.spool import Spool
from xscl.connectors.xmlfiles import XmlFileOptions, iter_xml_files
from xscl.errors import ConnectorIOError

DEFAULT_SPOOL = "xscl-data/spool"


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "poll",
        help="poll RSS/Atom feeds into the durable spool",
        description=(
            "Read every feed (a file, a directory of feed files, or an http(s) URL), turn "
            "each item into a document of STREAM (raw or normalized form, spec section 1) "
            "and append it to the spool; items already in the spool (same stream and "
            "docid) are counted as duplicates. HTTP uses conditional GET, retries and a "
            "per-host rate limit; its state is kept in --state. Feed errors are reported "
            "and written to the dead-letter file, never fatal."
        ),
        epilog=(
            "examples:\n"
            "  xscl poll --form raw --spool xscl-data/spool --stream news "
            "examples/rss/feeds/news.atom\n"
            "  xscl poll --spool xscl-data/spool --stream advisories https://vendor.example/feed.rss\n"
            "  xscl poll --xml --record item --ts-path pubDate --docid-path guid --stream vendor "
            "--spool xscl-data/spool examples/rss/feeds/vendor.rss"
        ),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("feeds", nargs="+", metavar="FEEDS", help="feed files, directories or URLs")
    parser.add_argument(
        "--spool", default=DEFAULT_SPOOL, help=f"spool directory (default {DEFAULT_SPOOL})"
    )
    parser.add_argument(
        "--stream", default="feeds", help="stream name of the items (default feeds)"
    )
    parser.add_argument(
        "--form", choices=FORMS, default="normalized", help="item form (default normalized)"
    )
    parser.add_argument("--state", help="HTTP state file (default SPOOL/feeds-state.json)")
    parser.add_argument(
        "--dead-letter", help="dead-letter JSONL file (default SPOOL/deadletter.jsonl)"
    )
    parser.add_argument(
        "--interval", type=float, metavar="SECONDS", help="poll again every SECONDS"
    )
    parser.add_argument(
        "--once", action="store_true", help="one pass only (the default without --interval)"
    )
    parser.add_argument(
        "--timeout", type=float, default=20.0, help="HTTP timeout in seconds (default 20)"
    )
    parser.add_argument("--retries", type=int, default=3, help="HTTP retries (default 3)")
    parser.add_argument(
        "--min-host-interval",
        type=float,
        default=1.0,
        help="seconds between requests to one host (default 1)",
    )
    add_retention_option(parser)
    parser.add_argument("--json", action="store_true", help="print the summary as one JSON object")
    parser.add_argument("--quiet", action="store_true", help="no progress line")
    xml = parser.add_argument_group(
        "XML files",
        "with --xml, FEEDS are XML files and folders of them (files ending in .xml), "
        "read once into STREAM: one document per file, or per --record element",
    )
    xml.add_argument("--xml", action="store_true", help="read XML files, not feeds")
    xml.add_argument(
        "--record", metavar="NAME", help="one document per element of this local name"
    )
    xml.add_argument(
        "--ts-path",
        metavar="PATH",
        help="the document's time: a path of local names from the document (the last "
        "may be @attr) to an RFC 3339, RFC 822 or epoch-seconds value (default: the "
        "file's modification time)",
    )
    xml.add_argument(
        "--docid-path",
        metavar="PATH",
        help="the document's id, a path as --ts-path (default: the file's name under "
        "the folder given, #N appended per record)",
    )
    parser.set_defaults(func=run)


def _usage_error(message: str) -> int:
    print(f"xscl poll: {message}", file=sys.stderr)
    return 2


def run(args: argparse.Namespace) -> int:
    if not STREAM_NAME.match(args.stream):
        return _usage_error(f"invalid stream name {args.stream!r}")
    if args.interval is not None and args.interval <= 0:
        return _usage_error("--interval must be positive")
    if args.timeout <= 0 or args.retries < 0 or args.min_host_interval < 0:
        return _usage_error(
            "--timeout must be positive, --retries and --min-host-interval not negative"
        )
    xml_options = [o for o in ("record", "ts_path", "docid_path") if getattr(args, o)]
    if xml_options and not args.xml:
        named = ", ".join("--" + o.replace("_", "-") for o in xml_options)
        return _usage_error(f"{named}: only with --xml")
    if args.xml and args.interval is not None:
        return _usage_error("--xml reads the files once: --interval does not apply")
    spool_dir = Path(args.spool)
    state_path = Path(args.state or spool_dir / "feeds-state.json")
    dead_letter_path = Path(args.dead_letter or spool_dir / "deadletter.jsonl")
    for option, path, problem in (
        ("--spool", spool_dir, unwritable_folder(spool_dir)),
        ("--state", state_path, unwritable_file(state_path)),
        ("--dead-letter", dead_letter_path, unwritable_file(dead_letter_path)),
    ):
        if problem is not None:
            print(f"xscl poll: cannot write {option} {path}: {problem}; "
                  f"pass a {option} path you can write to", file=sys.stderr)  # fmt: skip
            return 1
    try:
        if args.xml:
            return _read_xml_files(args, spool_dir, dead_letter_path)
        return _poll(args, spool_dir, state_path, dead_letter_path)
    except ConnectorIOError as exc:  # e.g. the spool is locked by another writer
        print(f"xscl poll: {exc}", file=sys.stderr)
        return 1
    except OSError as exc:  # the disk filled up, a folder changed under us, ...
        print(f"xscl poll: I/O error: {os_error_reason(exc)} (--spool {spool_dir})",
              file=sys.stderr)  # fmt: skip
        return 1


def _poll(args: argparse.Namespace, spool_dir: Path, state_path: Path, dead_path: Path) -> int:
    summary: PollSummary | None = None
    with Spool(spool_dir) as spool:
        state = FeedStateStore(state_path)
        policy = FetchPolicy(
            timeout_s=args.timeout, retries=args.retries, min_host_interval_s=args.min_host_interval
        )
        with open(dead_path, "a", encoding="utf-8") as dead_letters:
            poller = Poller(
                spool,
                stream=args.stream,
                form=args.form,
                fetcher=Fetcher(policy, state),
                dead_letters=dead_letters,
            )
            try:
                while True:
                    sources = expand_feed_sources(args.feeds)
                    summary = poller.poll(
                        sources, progress=None if args.quiet else _progress_printer()
                    )
                    _print_summary(summary, args, spool, dead_path)
                    _compact(spool, args)
                    if args.once or args.interval is None:
                        break
                    _report_failures(summary, args.feeds, dead_path)
                    time.sleep(args.interval)
            except KeyboardInterrupt:
                print("xscl poll: interrupted", file=sys.stderr)
    if summary is None:  # interrupted during the first pass
        return 0
    return _report_failures(summary, args.feeds, dead_path)


def _read_xml_files(args: argparse.Namespace, spool_dir: Path, dead_path: Path) -> int:
    """``--xml``: every document of the files into the spool, 1,000 per commit; exit 1
    when no file was found or none gave a document."""
    options = XmlFileOptions(
        args.stream, record_tag=args.record, ts_path=args.ts_path, docid_path=args.docid_path
    )
    documents: list[Document] = []
    new = duplicate = dead = 0
    with Spool(spool_dir) as spool, open(dead_path, "a", encoding="utf-8") as letters:

        def commit() -> None:
            nonlocal new, duplicate
            offsets = spool.append(documents)
            added = sum(1 for o in offsets if o is not None)
            new, duplicate = new + added, duplicate + len(offsets) - added
            documents.clear()

        for item in iter_xml_files(args.feeds, options):
            if isinstance(item, DeadLetter):
                letters.write(item.to_json() + "\n")
                dead += 1
            else:
                documents.append(item)
                if len(documents) >= 1_000:
                    commit()
        commit()
        _compact(spool, args)
        summary = {"documents": new + duplicate, "new": new, "duplicate": duplicate,
                   "dead_letters": dead, "spool": str(spool.path), "stream": args.stream,
                   "next_offset": spool.next_offset()}  # fmt: skip
    if args.json:
        print(json.dumps(summary, sort_keys=True), flush=True)
    else:
        print(f"xml documents {new + duplicate}: new {new}, duplicate {duplicate}; dead "
              f"letters {dead} -> {dead_path}\nspool {spool_dir}: next offset "
              f"{summary['next_offset']}", flush=True)  # fmt: skip
    if new + duplicate == 0:
        what = "no XML file found" if dead == 0 else "no document could be read"
        print(f"xscl poll: {what} in {' '.join(args.feeds)} (dead letters: {dead_path})",
              file=sys.stderr)  # fmt: skip
        return 1
    return 0


def _report_failures(summary: PollSummary, feeds: list[str], dead_letters: Path) -> int:
    """Say on stderr how many feeds of the pass failed; 1 when no feed could be read."""
    if summary.feeds == 0:
        print(f"xscl poll: no feed found in {' '.join(feeds)} (feed files end in "
              f"{' '.join(FEED_SUFFIXES)}; or give http(s) URLs)", file=sys.stderr)  # fmt: skip
        return 1
    if summary.feeds_error == 0:
        return 0
    plural = "s" if summary.feeds != 1 else ""
    failed = f"{summary.feeds_error} of {summary.feeds} feed{plural} failed"
    if summary.feeds_error == summary.feeds:
        print(f"xscl poll: no feed could be read: {failed} (dead letters: {dead_letters})",
              file=sys.stderr)  # fmt: skip
        return 1
    print(f"xscl poll: {failed} (dead letters: {dead_letters})", file=sys.stderr)
    return 0


def _progress_printer() -> Callable[[PollSummary], None]:
    tty = sys.stderr.isatty()

    def show(summary: PollSummary) -> None:
        step = max(1, summary.feeds // 20)
        if not tty and summary.done % step and summary.done != summary.feeds:
            return
        line = (
            f"poll: feeds {summary.done}/{summary.feeds} | items new {summary.new} "
            f"dup {summary.duplicate} | errors {summary.errors}"
        )
        end = "\n" if not tty or summary.done == summary.feeds else ""
        print(("\r" if tty else "") + line, end=end, file=sys.stderr, flush=True)

    return show


def _compact(spool: Spool, args: argparse.Namespace) -> None:
    """With ``--retention``: drop what the policy no longer keeps, one line when it did."""
    if args.retention is None:
        return
    done = spool.compact(args.retention)
    if done.dropped and not args.json:
        print(f"retention: dropped {done.dropped} documents; retained offsets "
              f"{done.first}..{spool.latest_offset()}", flush=True)  # fmt: skip


def _print_summary(
    summary: PollSummary, args: argparse.Namespace, spool: Spool, dead_letters: Path
) -> None:
    if args.json:
        out = summary.to_dict()
        out.update(
            spool=str(spool.path),
            stream=args.stream,
            form=args.form,
            next_offset=spool.next_offset(),
        )
        print(json.dumps(out, sort_keys=True), flush=True)
        return
    print(
        f"feeds {summary.feeds}: ok {summary.feeds_ok}, not modified {summary.feeds_not_modified}, "
        f"errors {summary.feeds_error} (bozo {summary.feeds_bozo}, not well-formed "
        f"{summary.feeds_not_well_formed})\n"
        f"items {summary.items}: new {summary.new}, duplicate {summary.duplicate}; "
        f"unrecoverable items {summary.failed_items}; "
        f"dead letters {summary.dead_letters} -> {dead_letters}\n"
        f"spool {spool.path}: next offset {spool.next_offset()}",
        flush=True,
    )
    for report in summary.reports:
        if report.status == "error":
            print(f"  error {report.source}: {report.error_code} {report.error}", flush=True)
