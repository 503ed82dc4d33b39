"""Errors of the connectors (stage 0): stable ``XSCL-C0xx`` codes and dead letters.

Two families, each subclassing the matching builtin so callers that only know the
builtins still catch them:

* ``ConnectorError`` (a ``ValueError``): the *input* is bad: a malformed JSONL
  envelope, a timestamp that is not RFC 3339, a feed or XML file that cannot be
  recovered, a record without the configured docid/ts path.
* ``ConnectorIOError`` (an ``OSError``): the *environment* failed: an HTTP fetch,
  a timeout, a spool locked by another writer, a corrupt spool segment.

Bad input never stops a stream: connectors turn each error into a ``DeadLetter``
(spec section 4 asks for counted, written-out errors) and keep going.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from typing import Any, ClassVar

#: Stable error codes and their one-line meaning.
ERROR_CODES: dict[str, str] = {
    "XSCL-C001": "envelope line is not a JSON object",
    "XSCL-C002": "envelope field missing or of the wrong type",
    "XSCL-C003": "invalid timestamp (RFC 3339 or seconds since the epoch expected)",
    "XSCL-C004": "invalid stream name (must match [A-Za-z_][A-Za-z0-9_.-]*)",
    "XSCL-C005": "document larger than the configured limit",
    "XSCL-C010": "feed could not be parsed (nothing recoverable)",
    "XSCL-C011": "feed item could not be recovered",
    "XSCL-C012": "XML file is not well-formed",
    "XSCL-C013": "configured docid/ts path has no usable value in the document",
    "XSCL-C020": "fetch failed (network error or HTTP error status)",
    "XSCL-C021": "fetch timed out",
    "XSCL-C022": "unsupported feed location (only files, directories, http and https)",
    "XSCL-C030": "spool is locked by another writer",
    "XSCL-C031": "spool segment is corrupt (not a torn tail)",
    "XSCL-C032": "spool record cannot be encoded",
}


class _Coded(Exception):
    """Base of both families: a stable ``code`` plus the place the error was found."""

    code: ClassVar[str] = "XSCL-C000"

    def __init__(self, message: str, *, source: str | None = None, line: int | None = None):
        super().__init__(message)
        self.message = message
        self.source = source
        self.line = line

    def describe(self) -> str:
        where = ":".join(str(p) for p in (self.source, self.line) if p is not None)
        return f"{where}: {self.code} {self.message}" if where else f"{self.code} {self.message}"

    def __str__(self) -> str:
        return self.describe()


class ConnectorError(_Coded, ValueError):
    """Bad connector input (codes ``XSCL-C00x``/``XSCL-C01x``)."""


class EnvelopeSyntaxError(ConnectorError):
    code = "XSCL-C001"


class EnvelopeFieldError(ConnectorError):
    code = "XSCL-C002"


class TimestampError(ConnectorError):
    code = "XSCL-C003"


class StreamNameError(ConnectorError):
    code = "XSCL-C004"


class DocumentTooLargeError(ConnectorError):
    code = "XSCL-C005"


class FeedParseError(ConnectorError):
    code = "XSCL-C010"


class ItemRecoveryError(ConnectorError):
    code = "XSCL-C011"


class XmlFileError(ConnectorError):
    code = "XSCL-C012"


class RecordPathError(ConnectorError):
    code = "XSCL-C013"


class ConnectorIOError(_Coded, OSError):
    """The environment failed (codes ``XSCL-C02x``/``XSCL-C03x``)."""


class FetchError(ConnectorIOError):
    code = "XSCL-C020"


class FetchTimeoutError(FetchError):
    code = "XSCL-C021"


class UnsupportedLocationError(ConnectorIOError):
    code = "XSCL-C022"


class SpoolLockedError(ConnectorIOError):
    code = "XSCL-C030"


class SpoolCorruptError(ConnectorIOError):
    code = "XSCL-C031"


class SpoolEncodeError(ConnectorError):
    code = "XSCL-C032"


@dataclass(frozen=True)
class DeadLetter:
    """One counted, written-out error record (a line of a ``*.deadletter.jsonl`` file).

    ``source`` is the file or URL, ``line`` the 1-based line (JSONL) or item/record
    index (feeds, XML files) when known, ``stream``/``docid`` what is known of the
    document, ``reason`` a human message and ``code`` the stable ``XSCL-C0xx`` code.
    """

    source: str | None
    line: int | None
    stream: str | None
    docid: str | None
    reason: str
    code: str

    @classmethod
    def from_error(
        cls,
        error: ConnectorError | ConnectorIOError,
        *,
        stream: str | None = None,
        docid: str | None = None,
    ) -> DeadLetter:
        return cls(error.source, error.line, stream, docid, error.message, error.code)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), ensure_ascii=False, separators=(",", ":"))
