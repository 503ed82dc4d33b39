"""Every xscl error: one root exception, one table of stable codes, one factory.

Modelled on elementpath's ``exceptions`` module:

* ``XsclError`` is the root; each error carries a stable ``code`` (``XSCL-`` and a
  family letter: ``P`` syntax, ``V`` validation, ``C`` connectors and document
  envelopes, ``X`` documents and definitions Stage 1 refuses, ``R`` documents
  rejected for when they came, ``S`` the Spark job, ``A`` the subscription API;
  ``CEL-`` and ``P``, ``V``, ``E`` input events, ``S`` subscriptions, for the event
  language), a ``message``, and where it
  was found when that is known: ``source`` (a file or URL), ``qid``, ``line`` and
  ``column`` (1-based), an ``excerpt`` with a caret, what was ``expected``;
* every class also subclasses the builtin a caller would catch (``SyntaxError``,
  ``ValueError``, ``OSError``, ``RuntimeError``), so code that knows only the
  builtins still handles it;
* ``ERROR_CODES`` maps each code to its class and a message template (the message
  when none is given); ``XsclError.from_code`` is the one factory, so one fault gets
  one class and one code wherever it is raised, by every engine and the reference;
* codes are part of the contract: never renumbered, never reused (``RETIRED_CODES``
  lists the ones no longer raised). ``docs/errors.md`` is generated from the table
  (``codes_markdown``) and a test keeps the two equal.

Errors pickle (Spark raises some on executors and ships them to the driver) and
turn into plain JSON with ``to_dict``.

>>> error = XsclError.from_code("XSCL-C003", "ts 'soon' is not RFC 3339", source="d.jsonl", line=4)
>>> type(error).__name__, isinstance(error, ValueError)
('TimestampError', True)
>>> print(error)
d.jsonl:4: XSCL-C003 ts 'soon' is not RFC 3339
>>> print(XsclError.from_code("XSCL-S003"))
XSCL-S003 the spool cannot be read
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar, NamedTuple, TypeVar

_E = TypeVar("_E", bound="XsclError")


def line_column(text: str, offset: int) -> tuple[int, int]:
    """1-based (line, column) of ``offset`` in ``text`` (columns count code points).

    >>> line_column("ab\\ncd", 4)
    (2, 2)
    """
    offset = max(0, min(offset, len(text)))
    line = text.count("\n", 0, offset) + 1
    line_start = text.rfind("\n", 0, offset) + 1
    return line, offset - line_start + 1


def excerpt_at(text: str, offset: int) -> str:
    """The source line holding ``offset`` and a caret line pointing at it.

    Tabs before the column are kept in the caret line so the caret lines up in
    a terminal whatever the tab width. A trailing ``\\r`` is dropped.

    >>> print(excerpt_at("Q1: S//a->x JOIN", 12))
    Q1: S//a->x JOIN
                ^
    """
    offset = max(0, min(offset, len(text)))
    start = text.rfind("\n", 0, offset) + 1
    end = text.find("\n", offset)
    if end < 0:
        end = len(text)
    source_line = text[start:end].rstrip("\r")
    prefix = text[start:offset]
    caret = "".join("\t" if ch == "\t" else " " for ch in prefix) + "^"
    return f"{source_line}\n{caret}"


class XsclError(Exception):
    """The root of every xscl error; see the module docstring.

    ``code`` defaults to the class's ``default_code`` (a class that stands for one
    code); a code belongs to exactly one class (``ERROR_CODES``), so building an
    error of another class with it is refused: use ``from_code``.
    """

    #: the code of an error built without one (None: the class has several codes)
    default_code: ClassVar[str | None] = None

    code: str
    message: str
    source: str | None
    qid: str | None
    line: int | None
    column: int | None
    excerpt: str
    expected: tuple[str, ...]

    def __init__(
        self,
        message: str | None = None,
        *,
        code: str | None = None,
        source: str | None = None,
        qid: str | None = None,
        line: int | None = None,
        column: int | None = None,
        excerpt: str = "",
        expected: Sequence[str] = (),
    ) -> None:
        code = code or self.default_code
        entry = ERROR_CODES.get(code or "")
        if code is None or entry is None:
            raise TypeError(f"{type(self).__name__} needs one of the codes of ERROR_CODES")
        if not isinstance(self, entry.cls):
            raise TypeError(f"{code} is a {entry.cls.__name__}: use XsclError.from_code")
        message = entry.template if message is None else message
        super().__init__(message)
        self.code = code
        self.message = message
        self.source = source
        self.qid = qid
        self.line = line
        self.column = column
        self.excerpt = excerpt
        self.expected = tuple(expected)

    @classmethod
    def from_code(cls: type[_E], code: str, message: str | None = None, **where: Any) -> _E:
        """The error of ``code`` (its class from ``ERROR_CODES``), typed as ``cls``.

        ``where`` takes the keyword fields of ``XsclError``; ``text`` and ``offset``
        together fill ``line``, ``column`` and ``excerpt``. Asking a family for a code
        of another family (``Stage1Error.from_code("XSCL-C001")``) is a ``TypeError``.
        """
        entry = ERROR_CODES.get(code)
        if entry is None:
            raise ValueError(f"unknown error code {code!r}")
        if not issubclass(entry.cls, cls):
            raise TypeError(f"{code} is a {entry.cls.__name__}, not a {cls.__name__}")
        text, offset = where.pop("text", None), where.pop("offset", None)
        if text is not None and offset is not None:
            where["line"], where["column"] = line_column(text, offset)
            where["excerpt"] = excerpt_at(text, offset)
        error = entry.cls(message, code=code, **where)
        assert isinstance(error, cls)
        return error

    @property
    def location(self) -> str:
        """``[source:][qid:]line[:column]`` with the parts that are known."""
        parts = [p for p in (self.source, self.qid) if p]
        if self.line is not None:
            parts.append(str(self.line))
            if self.column is not None:
                parts.append(str(self.column))
        return ":".join(parts)

    @property
    def headline(self) -> str:
        """``CODE message (expected: ...)`` without location or excerpt."""
        head = f"{self.code} {self.message}"
        if self.expected:
            head += f" (expected: {', '.join(self.expected)})"
        return head

    def __str__(self) -> str:
        head = self.headline
        if self.location:
            head = f"{self.location}: {head}"
        if self.excerpt:
            head += "".join(f"\n  {ln}" for ln in self.excerpt.split("\n"))
        return head

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}({self.message!r}, code={self.code!r}, qid={self.qid!r}, "
            f"line={self.line!r}, column={self.column!r})"
        )

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        assert isinstance(other, XsclError)
        return self.to_dict() == other.to_dict()

    def __hash__(self) -> int:
        return hash((type(self).__name__, self.code, self.qid, self.line, self.column))

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict of every field (``expected`` as a list)."""
        return {
            "code": self.code,
            "message": self.message,
            "qid": self.qid,
            "line": self.line,
            "column": self.column,
            "excerpt": self.excerpt,
            "expected": list(self.expected),
            "source": self.source,
        }

    def _fields(self) -> dict[str, Any]:
        """The keyword arguments that rebuild this error (``__reduce__``)."""
        fields = self.to_dict()
        del fields["message"]
        return fields

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuild, (type(self), self.message, self._fields()))


def _rebuild(cls: type[XsclError], message: str, fields: dict[str, Any]) -> XsclError:
    """Unpickle helper: an error from its message and ``_fields``."""
    return cls(message, **fields)


# -- the language (xscl.lang) ---------------------------------------------------------


class XsclSyntaxError(XsclError, SyntaxError):
    """A query that does not parse (``XSCL-P0xx``).

    The builtin ``SyntaxError`` fields (``lineno``, ``offset``, ``text``,
    ``filename``) are filled too, for generic tooling.
    """

    def __init__(self, message: str | None = None, **fields: Any) -> None:
        super().__init__(message, **fields)
        syntax_error: SyntaxError = self
        syntax_error.msg = self.headline
        syntax_error.lineno = self.line
        syntax_error.offset = self.column
        syntax_error.filename = self.source
        syntax_error.text = self.excerpt.split("\n", 1)[0] if self.excerpt else None


class XsclValidationError(XsclError, ValueError):
    """A query that parses but breaks a rule of the language (``XSCL-V0xx``)."""


class PublishCycleError(XsclValidationError):
    """Queries that publish into streams they (transitively) read (spec 3.4)."""

    default_code = "XSCL-V005"


class _CarriesErrors(XsclError):
    """An error whose reason is other errors (``errors``: a query file's, each coded)."""

    def __init__(
        self, message: str | None = None, *, errors: Sequence[XsclError] = (), **fields: Any
    ) -> None:
        super().__init__(message, **fields)
        self.errors = tuple(errors)

    def _fields(self) -> dict[str, Any]:
        return {**super()._fields(), "errors": self.errors}


class InvalidQueriesError(_CarriesErrors, XsclValidationError):
    """A query text given whole (``xscl.reference.run_batch``) holds invalid queries;
    ``errors`` has every syntax and validation error, nothing was evaluated."""

    default_code = "XSCL-V011"


# -- connectors and document envelopes (xscl.connectors) ------------------------------


class ConnectorError(XsclError, ValueError):
    """Bad input (``XSCL-C00x``/``C01x``): a document envelope, a feed, an XML file.

    Connectors turn each into a dead letter and go on: bad input never stops a stream.
    """


class EnvelopeSyntaxError(ConnectorError):
    default_code = "XSCL-C001"


class EnvelopeFieldError(ConnectorError):
    default_code = "XSCL-C002"


class TimestampError(ConnectorError):
    default_code = "XSCL-C003"


class StreamNameError(ConnectorError):
    default_code = "XSCL-C004"


class DocumentTooLargeError(ConnectorError):
    default_code = "XSCL-C005"


class FeedParseError(ConnectorError):
    default_code = "XSCL-C010"


class ItemRecoveryError(ConnectorError):
    default_code = "XSCL-C011"


class XmlFileError(ConnectorError):
    default_code = "XSCL-C012"


class RecordPathError(ConnectorError):
    default_code = "XSCL-C013"


class SpoolEncodeError(ConnectorError):
    default_code = "XSCL-C032"


class ConnectorIOError(XsclError, OSError):
    """The environment failed (``XSCL-C02x``/``C03x``): a fetch, the spool's files."""


class FetchError(ConnectorIOError):
    default_code = "XSCL-C020"


class FetchTimeoutError(FetchError):
    default_code = "XSCL-C021"


class UnsupportedLocationError(ConnectorIOError):
    default_code = "XSCL-C022"


class FeedFileError(ConnectorIOError):
    default_code = "XSCL-C023"


class SpoolLockedError(ConnectorIOError):
    default_code = "XSCL-C030"


class SpoolCorruptError(ConnectorIOError):
    default_code = "XSCL-C031"


class SpoolExpiredError(ConnectorIOError):
    default_code = "XSCL-C033"


# -- documents: Stage 1 (xscl.xpath), lateness ----------------------------------------


class Stage1Error(XsclError, ValueError):
    """What Stage 1 refuses: a document (``XmlDocumentError``), a definition
    (``XSCL-X010``-``X012``) or a function predicate's evaluation (``XSCL-X020``)."""


class XmlDocumentError(Stage1Error):
    """A document that is not acceptable XML (``XSCL-X001``-``X005``): every engine and
    the reference refuse the same documents with the same codes."""


class FunctionPredicateError(Stage1Error):
    """A function predicate that could not be compiled or evaluated (counted, false)."""

    default_code = "XSCL-X020"


class LateDocumentError(XsclError, ValueError):
    """A document older than the allowed lateness (``XSCL-R008``; docs/language.md)."""

    default_code = "XSCL-R008"


# -- the Spark job (xscl.spark_plugin) ------------------------------------------------


class JavaNotFoundError(XsclError, OSError):
    """No Java runtime could be found before starting the JVM."""

    default_code = "XSCL-S001"


class DataSourceOptionError(XsclError, ValueError):
    """An option of an xscl Spark data source is missing or malformed."""

    default_code = "XSCL-S002"


class SpoolReadError(XsclError, OSError):
    """The spool directory is missing or cannot be read."""

    default_code = "XSCL-S003"


class ResultsDirectoryError(XsclError, OSError):
    """A results directory holds a committed file that cannot be parsed."""

    default_code = "XSCL-S004"


class SparkBatchError(XsclError, RuntimeError):
    """The streaming query of ``xscl run --engine spark`` failed; nothing was written."""

    default_code = "XSCL-S005"


class LeaseLostError(XsclError, RuntimeError):
    """Another instance took the job's lease: this one must write nothing more."""

    default_code = "XSCL-S020"


class LeaseStoreError(XsclError, OSError):
    """The lease (a file on the home, or a Kubernetes Lease) cannot be read or written."""

    default_code = "XSCL-S021"


class LegacyHomeError(XsclError, OSError):
    """A checkpoint or results folder in the layout before process pairs (no epochs)."""

    default_code = "XSCL-S022"


class OutputWriteError(XsclError, OSError):
    """The job's sink could not write under its results folder; the batch is not
    committed (it is replayed whole by the next start)."""

    default_code = "XSCL-S023"


class CheckpointWriteError(XsclError, OSError):
    """Spark could not write the job's checkpoint or its working files under the home
    (full, read-only, over quota); the batch is not committed (it is replayed whole by
    the next start)."""

    default_code = "XSCL-S024"


class NoSubscriptionsError(XsclError, ValueError):
    """A job with nothing to explain: no registry under the home (``XSCL-S015``), or
    one whose queries were all unsubscribed (``XSCL-S016``)."""


class SubscriptionError(_CarriesErrors, ValueError):
    """A subscribe/unsubscribe that cannot be applied: the job's registry
    (``XSCL-S010``-``S014``) or the CEL event engine (``CEL-S001``-``S006``).

    ``errors`` holds the query file's parse and validation errors when they are
    the reason.
    """


class ResultCursorError(XsclError, ValueError):
    """A results cursor that is not one this service issued for the subscription it is
    used with (``XSCL-A010``, ``xscl.results.cursor``)."""

    default_code = "XSCL-A010"


class ApiRequestError(XsclError, ValueError):
    """A request the subscription API refuses, changing nothing (``XSCL-A0xx``,
    ``xscl.service.api``): a bad token, an unknown id, a body too large or malformed."""


# -- CEL input events (xscl.events) ---------------------------------------------------


class EventError(XsclError, ValueError):
    """An input event CEL refuses (``CEL-E00x``): a bad envelope line, an event on a
    PUBLISHed stream, a late one. It is a dead letter, never a stop (docs/cel.md 7.3)."""


# -- the table --------------------------------------------------------------------------


class ErrorCode(NamedTuple):
    """A code's class and message template (the message of an error built without one)."""

    cls: type[XsclError]
    template: str


#: Every code in use: its class and message template.
ERROR_CODES: dict[str, ErrorCode] = {
    # Syntax: a query that does not parse.
    "XSCL-P001": ErrorCode(XsclSyntaxError, "unexpected character"),
    "XSCL-P002": ErrorCode(XsclSyntaxError, "unterminated string literal"),
    "XSCL-P003": ErrorCode(XsclSyntaxError, "unexpected token"),
    "XSCL-P004": ErrorCode(XsclSyntaxError, "unexpected end of query"),
    "XSCL-P005": ErrorCode(
        XsclSyntaxError, "invalid window (a decimal number with unit ms, s, m, h or d, or INF)"
    ),
    "XSCL-P006": ErrorCode(
        XsclSyntaxError, "invalid query id (must match [A-Za-z_][A-Za-z0-9_.-]*)"
    ),
    "XSCL-P007": ErrorCode(XsclSyntaxError, "DECLARE NAMESPACE after the first query"),
    "XSCL-P008": ErrorCode(XsclSyntaxError, "empty query between two ';'"),
    "XSCL-P009": ErrorCode(XsclSyntaxError, "the file holds no query"),
    "XSCL-P010": ErrorCode(XsclSyntaxError, "reserved keyword used as a stream or variable name"),
    "XSCL-P011": ErrorCode(
        XsclSyntaxError, "invalid function predicate (unbalanced brackets or quotes)"
    ),
    "XSCL-P012": ErrorCode(XsclSyntaxError, "invalid namespace declaration"),
    "XSCL-P013": ErrorCode(XsclSyntaxError, "the query file is not UTF-8 text"),
    # Validation: a query that parses but breaks a rule of the language.
    "XSCL-V001": ErrorCode(XsclValidationError, "unbound variable in a join predicate"),
    "XSCL-V002": ErrorCode(XsclValidationError, "unbound variable in SELECT"),
    "XSCL-V003": ErrorCode(XsclValidationError, "variable bound twice"),
    "XSCL-V004": ErrorCode(XsclValidationError, "unknown stream"),
    "XSCL-V005": ErrorCode(PublishCycleError, "PUBLISH cycle"),
    "XSCL-V006": ErrorCode(XsclValidationError, "predicate uses a variable of a later block"),
    "XSCL-V007": ErrorCode(XsclValidationError, "duplicate query id"),
    "XSCL-V008": ErrorCode(XsclValidationError, "unknown namespace prefix"),
    "XSCL-V009": ErrorCode(XsclValidationError, "invalid XPath function predicate"),
    "XSCL-V010": ErrorCode(
        XsclValidationError,
        "a function predicate's regular expression is refused (not XPath regex syntax, "
        "invalid flags, not a string literal, or exponential backtracking)",
    ),
    "XSCL-V011": ErrorCode(
        InvalidQueriesError, "the query text holds invalid queries (each is in errors)"
    ),
    "XSCL-V012": ErrorCode(
        XsclValidationError, "a reserved stream name (xscl.composite: the job's composite events)"
    ),
    # Connectors and document envelopes: bad input, then a failed environment.
    "XSCL-C001": ErrorCode(EnvelopeSyntaxError, "envelope line is not a JSON object"),
    "XSCL-C002": ErrorCode(EnvelopeFieldError, "envelope field missing or of the wrong type"),
    "XSCL-C003": ErrorCode(
        TimestampError, "invalid timestamp (RFC 3339 or seconds since the epoch expected)"
    ),
    "XSCL-C004": ErrorCode(
        StreamNameError, "invalid stream name (must match [A-Za-z_][A-Za-z0-9_.-]*)"
    ),
    "XSCL-C005": ErrorCode(DocumentTooLargeError, "document larger than the configured limit"),
    "XSCL-C010": ErrorCode(FeedParseError, "feed could not be parsed (nothing recoverable)"),
    "XSCL-C011": ErrorCode(ItemRecoveryError, "feed item could not be recovered"),
    "XSCL-C012": ErrorCode(XmlFileError, "XML file is not well-formed"),
    "XSCL-C013": ErrorCode(
        RecordPathError, "configured docid/ts path has no usable value in the document"
    ),
    "XSCL-C020": ErrorCode(FetchError, "fetch failed (network error or HTTP error status)"),
    "XSCL-C021": ErrorCode(FetchTimeoutError, "fetch timed out"),
    "XSCL-C022": ErrorCode(
        UnsupportedLocationError,
        "unsupported feed location (only files, directories, http and https)",
    ),
    "XSCL-C023": ErrorCode(
        FeedFileError, "feed file cannot be read (missing, unreadable or not a file)"
    ),
    "XSCL-C030": ErrorCode(SpoolLockedError, "spool is locked by another writer"),
    "XSCL-C031": ErrorCode(SpoolCorruptError, "spool segment is corrupt (not a torn tail)"),
    "XSCL-C032": ErrorCode(SpoolEncodeError, "spool record cannot be encoded"),
    "XSCL-C033": ErrorCode(SpoolExpiredError, "spool offset no longer retained (--retention)"),
    # Documents Stage 1 refuses (every engine and the reference), and definitions.
    "XSCL-X001": ErrorCode(XmlDocumentError, "the document is not well-formed XML"),
    "XSCL-X002": ErrorCode(XmlDocumentError, "the document is larger than the size limit"),
    "XSCL-X003": ErrorCode(XmlDocumentError, "the elements nest deeper than the depth limit"),
    "XSCL-X004": ErrorCode(
        XmlDocumentError, "bytes that are not valid in the declared (or default UTF-8) encoding"
    ),
    "XSCL-X005": ErrorCode(
        XmlDocumentError, "an entity reference that would have to be expanded (never done)"
    ),
    "XSCL-X010": ErrorCode(Stage1Error, "a definition given to Stage 1 binds a variable"),
    "XSCL-X011": ErrorCode(Stage1Error, "a required pair is not an edge of the patterns"),
    "XSCL-X012": ErrorCode(
        Stage1Error,
        "a function predicate's regular expression is not a literal, not XPath regex "
        "syntax, or could backtrack exponentially",
    ),
    "XSCL-X020": ErrorCode(
        FunctionPredicateError, "an XPath function predicate failed (counted, predicate false)"
    ),
    # Documents rejected for when they came.
    "XSCL-R008": ErrorCode(LateDocumentError, "late"),
    # The Spark job.
    "XSCL-S001": ErrorCode(JavaNotFoundError, "no usable Java runtime (Java 17 or 21) was found"),
    "XSCL-S002": ErrorCode(DataSourceOptionError, "invalid option of an xscl Spark data source"),
    "XSCL-S003": ErrorCode(SpoolReadError, "the spool cannot be read"),
    "XSCL-S004": ErrorCode(
        ResultsDirectoryError, "a results directory holds a file it cannot understand"
    ),
    "XSCL-S005": ErrorCode(
        SparkBatchError, "the streaming query of a batch run failed; nothing was written"
    ),
    "XSCL-S010": ErrorCode(SubscriptionError, "a subscribed query file has invalid queries"),
    "XSCL-S011": ErrorCode(SubscriptionError, "a subscribed query id is already taken"),
    "XSCL-S012": ErrorCode(SubscriptionError, "an unsubscribed query id is not subscribed"),
    "XSCL-S013": ErrorCode(
        SubscriptionError, "a subscription would make PUBLISH/FROM references form a cycle"
    ),
    "XSCL-S014": ErrorCode(
        SubscriptionError, "an event file of the subscription registry cannot be read"
    ),
    "XSCL-S015": ErrorCode(
        NoSubscriptionsError, "the job has no registry under the home (nothing subscribed)"
    ),
    "XSCL-S016": ErrorCode(
        NoSubscriptionsError, "the job's registry holds no subscribed query (all unsubscribed)"
    ),
    "XSCL-S017": ErrorCode(
        SubscriptionError,
        "an unsubscribed query PUBLISHes a stream that other subscribed queries read",
    ),
    "XSCL-S020": ErrorCode(
        LeaseLostError, "this instance lost the job's lease to a newer epoch and stops (fenced)"
    ),
    "XSCL-S021": ErrorCode(LeaseStoreError, "the job's lease cannot be read or written"),
    "XSCL-S022": ErrorCode(
        LegacyHomeError, "the job's home was written by an xscl without process pairs (no epochs)"
    ),
    "XSCL-S023": ErrorCode(
        OutputWriteError, "the job's results folder cannot be written (full, read-only, gone)"
    ),
    "XSCL-S024": ErrorCode(
        CheckpointWriteError,
        "the job's checkpoint or Spark's working files under --home cannot be written (full, "
        "read-only, over quota)",
    ),
    # The subscription API (xscl api) and the results it serves.
    "XSCL-A001": ErrorCode(ApiRequestError, "no valid client token (missing, unknown or forged)"),
    "XSCL-A002": ErrorCode(
        ApiRequestError, "no such subscription (unknown, or another client's), or a bad id"
    ),
    "XSCL-A003": ErrorCode(ApiRequestError, "the request body is too large"),
    "XSCL-A004": ErrorCode(ApiRequestError, "the request body is not UTF-8 or not valid JSON"),
    "XSCL-A005": ErrorCode(ApiRequestError, "too many queries in one request"),
    "XSCL-A006": ErrorCode(ApiRequestError, "a query parameter is invalid"),
    "XSCL-A007": ErrorCode(ApiRequestError, "too many subscribe requests: retry later"),
    "XSCL-A008": ErrorCode(ApiRequestError, "the client token store cannot be read or written"),
    "XSCL-A009": ErrorCode(ApiRequestError, "no such endpoint, or not with this method"),
    "XSCL-A010": ErrorCode(
        ResultCursorError, "a results cursor is malformed or belongs to another subscription"
    ),
    # CEL (docs/cel.md section 7): a query of the event language that does not parse.
    "CEL-P001": ErrorCode(XsclSyntaxError, "unexpected character"),
    "CEL-P002": ErrorCode(XsclSyntaxError, "unterminated string literal"),
    "CEL-P003": ErrorCode(XsclSyntaxError, "unexpected token"),
    "CEL-P004": ErrorCode(XsclSyntaxError, "unexpected end of query"),
    "CEL-P005": ErrorCode(XsclSyntaxError, "invalid duration unit (us, ms, s, m, min, h, d)"),
    "CEL-P006": ErrorCode(
        XsclSyntaxError, "invalid query id (must match [A-Za-z_][A-Za-z0-9_.-]*)"
    ),
    "CEL-P007": ErrorCode(XsclSyntaxError, "DECLARE STREAM after the first query"),
    "CEL-P008": ErrorCode(XsclSyntaxError, "empty query between two ';'"),
    "CEL-P009": ErrorCode(XsclSyntaxError, "the file holds no query"),
    "CEL-P010": ErrorCode(XsclSyntaxError, "reserved keyword used as a name"),
    "CEL-P011": ErrorCode(
        XsclSyntaxError, "invalid decorator (only $1., $2. and $. before an attribute name)"
    ),
    "CEL-P012": ErrorCode(XsclSyntaxError, "the query file is not UTF-8 text"),
    # CEL: a query that parses but breaks a rule of the language.
    "CEL-V001": ErrorCode(XsclValidationError, "unknown attribute"),
    "CEL-V002": ErrorCode(
        XsclValidationError, "ambiguous attribute (in more than one input: decorate it)"
    ),
    "CEL-V003": ErrorCode(XsclValidationError, "decorator not allowed here"),
    "CEL-V004": ErrorCode(XsclValidationError, "unknown stream"),
    "CEL-V005": ErrorCode(XsclValidationError, "resubscription cycle"),
    "CEL-V006": ErrorCode(XsclValidationError, "duplicate query id"),
    "CEL-V007": ErrorCode(
        XsclValidationError,
        "FOLD schema inclusion: the second input has an attribute the first lacks",
    ),
    "CEL-V008": ErrorCode(
        XsclValidationError,
        "FOLD aggregate names an attribute the first input does not have",
    ),
    "CEL-V009": ErrorCode(XsclValidationError, "duplicate attribute name in a schema"),
    "CEL-V010": ErrorCode(XsclValidationError, "UNION of streams with different schemas"),
    "CEL-V011": ErrorCode(
        XsclValidationError,
        "DUR or a duration used other than as 'DUR relop constant' in a predicate",
    ),
    "CEL-V012": ErrorCode(
        XsclValidationError,
        "a condition where a value is expected, or a value where a condition is",
    ),
    "CEL-V013": ErrorCode(
        XsclValidationError,
        "conflicting stream schemas (declared twice, or declared and PUBLISHed)",
    ),
    "CEL-V014": ErrorCode(XsclValidationError, "unknown function or wrong number of arguments"),
    "CEL-V015": ErrorCode(XsclValidationError, "a SELECT expression needs AS name"),
    # CEL: input events refused (dead letters, docs/cel.md 7.3).
    "CEL-E001": ErrorCode(EventError, "the line is not a JSON object"),
    "CEL-E002": ErrorCode(EventError, "an envelope field is missing or has the wrong type"),
    "CEL-E003": ErrorCode(EventError, "a timestamp is not RFC 3339 or a number of seconds"),
    "CEL-E004": ErrorCode(EventError, "start is after end"),
    "CEL-E005": ErrorCode(
        EventError, "an attribute value is not a string, a finite number or null"
    ),
    "CEL-E006": ErrorCode(EventError, "the event names a PUBLISHed stream"),
    "CEL-E007": ErrorCode(EventError, "the event is later than the reorder slack allows"),
    # CEL: what the event engine refuses to subscribe or unsubscribe (docs/cel.md 7.4).
    "CEL-S001": ErrorCode(SubscriptionError, "a subscribed query id is already taken"),
    "CEL-S002": ErrorCode(
        SubscriptionError, "a stream's attributes differ from those the engine has for it"
    ),
    "CEL-S003": ErrorCode(SubscriptionError, "an unsubscribed query id is not subscribed"),
    "CEL-S004": ErrorCode(
        SubscriptionError, "an unsubscribed query PUBLISHes a stream another query reads"
    ),
    "CEL-S005": ErrorCode(
        SubscriptionError, "a query subscribed to a running job cannot join its partition groups"
    ),
    "CEL-S006": ErrorCode(
        SubscriptionError,
        "a channel the engine cannot declare: its name taken, a stream in another channel, "
        "PUBLISHed or of other attributes",
    ),
}

#: Codes no longer raised, and why; never given to another fault.
RETIRED_CODES: dict[str, str] = {
    "XSCL-R001": "the reference's bad envelope line; it now says XSCL-C001",
    "XSCL-R002": "the reference's bad envelope field; it now says XSCL-C002",
    "XSCL-R003": "the reference's bad ts; it now says XSCL-C003",
    "XSCL-R004": "the reference's bad stream name; it now says XSCL-C004",
    "XSCL-R005": "the reference's too large document; it now says XSCL-X002",
    "XSCL-R006": "the reference's malformed XML; it now says XSCL-X001",
    "XSCL-R007": "the reference's too deep document; it now says XSCL-X003",
    "XSCL-R009": "the reference's entity reference; it now says XSCL-X005",
    "XSCL-S006": "the driver's SQLite join state file, replaced by Spark's state store",
    "XSCL-S007": "the SQLite join state against the checkpoint, gone with it",
    "XSCL-X006": "a stream without definitions: a counter name, never an error",
}

#: The CEL codes of the table, with their meanings (docs/cel.md lists them).
CEL_ERROR_CODES: dict[str, str] = {
    code: entry.template for code, entry in ERROR_CODES.items() if code.startswith("CEL-")
}

_FAMILIES = (
    ("XSCL-P", "Syntax: a query that does not parse"),
    ("XSCL-V", "Validation: a query that parses but breaks a rule of the language"),
    ("XSCL-C", "Connectors and document envelopes"),
    ("XSCL-X", "Documents and definitions Stage 1 refuses"),
    ("XSCL-R", "Documents rejected for when they came"),
    ("XSCL-S", "The Spark job"),
    ("XSCL-A", "The subscription API (xscl api) and the results it serves"),
    ("CEL-P", "CEL syntax: an event query that does not parse (docs/cel.md)"),
    ("CEL-V", "CEL validation: an event query that breaks a rule of CEL (docs/cel.md)"),
    ("CEL-E", "CEL input events: refused, dead-lettered (docs/cel.md)"),
    ("CEL-S", "CEL subscriptions: what the event engine refuses (docs/cel.md)"),
)


def codes_markdown() -> str:
    """The tables of ``docs/errors.md``: every code with its class, builtin and meaning."""
    lines: list[str] = []
    for prefix, title in _FAMILIES:
        lines += [f"## {title}", "", "| code | class | builtin | meaning |", "| --- " * 4 + "|"]
        for code, (cls, template) in ERROR_CODES.items():
            if code.startswith(prefix):
                builtin = next(b for b in cls.__mro__ if b.__module__ == "builtins").__name__
                lines.append(f"| `{code}` | `{cls.__name__}` | `{builtin}` | {template} |")
        lines.append("")
    lines += ["## Retired codes (never reused)", "", "| code | was |", "| --- | --- |"]
    lines += [f"| `{code}` | {why} |" for code, why in RETIRED_CODES.items()]
    return "\n".join(lines) + "\n"
