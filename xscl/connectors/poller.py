"""Poll many feeds (files, directories, HTTP(S) URLs) into a spool, with per-feed reports.

One feed's failure (unreadable file, HTTP error, unparseable bytes) is reported in
its ``FeedReport``, counted in the ``PollSummary`` and written as a dead letter; it
never stops the other feeds. Each feed's documents are appended to the spool in one
durable commit, so a crash mid-poll loses at most the feed being processed, and a
re-poll re-delivers nothing twice (the spool deduplicates by (stream, docid)).
"""

from __future__ import annotations

import time
import urllib.parse
import urllib.request
import zlib
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import IO, Any, Literal

from xscl.connectors.dead_letters import DeadLetter
from xscl.connectors.feeds import FeedForm, parse_feed
from xscl.connectors.fetch import Fetcher
from xscl.connectors.spool import Spool
from xscl.connectors.xmlsafe import MAX_DOCUMENT_BYTES
from xscl.errors import ConnectorIOError, FeedFileError, UnsupportedLocationError

#: File name endings taken from a directory (other files, e.g. ``.json``, are skipped).
FEED_SUFFIXES = (".xml", ".rss", ".atom", ".rdf", ".feed")
FeedStatus = Literal["ok", "not_modified", "error"]


@dataclass(frozen=True)
class FeedSource:
    """One feed to poll: a local file, an http(s) URL, or a location of another scheme,
    which is reported as unsupported when polled (``XSCL-C022``)."""

    location: str
    kind: Literal["file", "url", "unsupported"]


def expand_feed_sources(args: Iterable[str]) -> list[FeedSource]:
    """Feed sources of the command-line arguments, directories walked recursively (sorted).

    ``http``/``https`` URLs are fetched, ``file:`` URLs are paths; any other
    ``scheme://`` is unsupported. Anything else that is not an existing directory is
    taken as a file (a missing one is reported when polled, like any other feed error).
    """
    sources: list[FeedSource] = []
    for arg in args:
        parts = urllib.parse.urlsplit(arg)
        scheme = parts.scheme.lower()
        if scheme in ("http", "https"):
            sources.append(FeedSource(arg, "url"))
            continue
        if scheme == "file":
            arg = urllib.request.url2pathname(parts.path)
        elif scheme and "://" in arg:
            sources.append(FeedSource(arg, "unsupported"))
            continue
        path = Path(arg)
        if path.is_dir():
            for found in sorted(p for p in path.rglob("*") if p.is_file()):
                if found.suffix.lower() in FEED_SUFFIXES:
                    sources.append(FeedSource(str(found), "file"))
        else:
            sources.append(FeedSource(arg, "file"))
    return sources


def read_feed_file(path: Path, max_bytes: int = MAX_DOCUMENT_BYTES) -> bytes:
    """A feed file's bytes; a gzip-compressed file (magic ``1f 8b``) is decompressed.

    Larger files (before or after decompression) are cut at ``max_bytes + 1`` bytes so
    that ``parse_feed`` reports them as too large.
    """
    with open(path, "rb") as handle:
        data = handle.read(max_bytes + 1)
    if data[:2] == b"\x1f\x8b":
        data = zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(data, max_bytes + 1)
    return data


@dataclass
class FeedReport:
    """What polling one feed did."""

    source: str
    status: FeedStatus = "ok"
    items: int = 0
    new: int = 0
    duplicate: int = 0
    failed: int = 0
    bozo: bool = False
    well_formed: bool = True
    version: str = ""
    #: entries feedparser recovered / item elements lxml recovered (see ``FeedResult``)
    entries: int = 0
    raw_items: int = 0
    error_code: str | None = None
    error: str | None = None


@dataclass
class PollSummary:
    """Totals of one poll pass over all feeds."""

    feeds: int = 0
    done: int = 0
    feeds_ok: int = 0
    feeds_not_modified: int = 0
    feeds_error: int = 0
    feeds_bozo: int = 0
    feeds_not_well_formed: int = 0
    items: int = 0
    new: int = 0
    duplicate: int = 0
    failed_items: int = 0
    dead_letters: int = 0
    reports: list[FeedReport] = field(default_factory=list)

    def add(self, report: FeedReport) -> None:
        self.reports.append(report)
        self.done += 1
        if report.status == "ok":
            self.feeds_ok += 1
        elif report.status == "not_modified":
            self.feeds_not_modified += 1
        else:
            self.feeds_error += 1
        self.feeds_bozo += report.bozo
        self.feeds_not_well_formed += not report.well_formed
        self.items += report.items
        self.new += report.new
        self.duplicate += report.duplicate
        self.failed_items += report.failed

    @property
    def errors(self) -> int:
        """Feeds that failed plus items that could not be recovered."""
        return self.feeds_error + self.failed_items

    def to_dict(self, *, with_reports: bool = False) -> dict[str, Any]:
        out = {k: v for k, v in asdict(self).items() if k != "reports"}
        out["errors"] = self.errors
        if with_reports:
            out["reports"] = [asdict(r) for r in self.reports]
        return out


class Poller:
    """Polls feed sources into one stream of a spool."""

    def __init__(
        self,
        spool: Spool,
        *,
        stream: str,
        form: FeedForm = "normalized",
        fetcher: Fetcher | None = None,
        dead_letters: IO[str] | None = None,
        now_micros: Callable[[], int] = lambda: time.time_ns() // 1000,
    ) -> None:
        self.spool = spool
        self.stream = stream
        self.form = form
        self.fetcher = fetcher or Fetcher()
        self.dead_letter_out = dead_letters
        self.now_micros = now_micros

    def poll(
        self,
        sources: list[FeedSource],
        progress: Callable[[PollSummary], None] | None = None,
    ) -> PollSummary:
        """One pass over ``sources``; ``progress`` is called after each feed."""
        summary = PollSummary(feeds=len(sources))
        for source in sources:
            report, letters = self.poll_one(source)
            summary.add(report)
            summary.dead_letters += len(letters)
            self._write_dead_letters(letters)
            if progress is not None:
                progress(summary)
        if self.fetcher.state is not None:
            self.fetcher.state.save()
        return summary

    def poll_one(self, source: FeedSource) -> tuple[FeedReport, list[DeadLetter]]:
        """Fetch/read, parse and spool one feed; failures end up in the report."""
        report = FeedReport(source.location)
        content_type = base_url = None
        if source.kind == "unsupported":
            return self._failed(report, UnsupportedLocationError(
                f"cannot poll {source.location}: only files, directories, http and https",
                source=source.location,
            ))  # fmt: skip
        if source.kind == "url":
            fetched = self.fetcher.fetch(source.location)
            if fetched.status != "ok":
                report.status = fetched.status
                report.error_code, report.error = fetched.error_code, fetched.error
                if fetched.status == "error":
                    letter = DeadLetter(
                        source.location,
                        None,
                        self.stream,
                        None,
                        fetched.error or "fetch failed",
                        fetched.error_code or "XSCL-C020",
                    )
                    return report, [letter]
                return report, []
            data, content_type = fetched.data, fetched.content_type
            base_url = fetched.final_url or source.location
        else:
            try:
                data = read_feed_file(Path(source.location))
            except (OSError, EOFError, zlib.error) as exc:
                reason = getattr(exc, "strerror", None) or exc
                return self._failed(report, FeedFileError(
                    f"cannot read {source.location}: {reason}", source=source.location
                ))  # fmt: skip
        result = parse_feed(
            data,
            source=source.location,
            stream=self.stream,
            form=self.form,
            first_seen_micros=self.now_micros(),
            content_type=content_type,
            base_url=base_url,
        )
        report.items, report.failed = result.recovered, result.failed
        report.bozo, report.well_formed, report.version = (
            result.bozo,
            result.well_formed,
            result.version,
        )
        report.entries, report.raw_items = result.entries, result.raw_items
        if (
            not result.documents
            and result.dead_letters
            and result.entries == 0
            and result.raw_items == 0
        ):
            report.status = "error"
            report.failed = 0
            report.error_code, report.error = (
                result.dead_letters[0].code,
                result.dead_letters[0].reason,
            )
        offsets = self.spool.append(result.documents)
        report.new = sum(1 for o in offsets if o is not None)
        report.duplicate = len(offsets) - report.new
        return report, result.dead_letters

    def _failed(
        self, report: FeedReport, error: ConnectorIOError
    ) -> tuple[FeedReport, list[DeadLetter]]:
        """The report and dead letter of a feed that could not be read at all."""
        report.status, report.error_code, report.error = "error", error.code, error.message
        return report, [DeadLetter.from_error(error, stream=self.stream)]

    def _write_dead_letters(self, letters: list[DeadLetter]) -> None:
        if self.dead_letter_out is None or not letters:
            return
        for letter in letters:
            self.dead_letter_out.write(letter.to_json() + "\n")
        self.dead_letter_out.flush()
