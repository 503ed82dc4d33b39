"""Error model of the XSCL language layer (spec/XSCL.md section 5).

Every rejected query produces one ``XsclError`` that names the query id, the
line and column (1-based, of the offending token in the *file*), what was
expected, and an excerpt of the source line with a caret under the column.
Codes are stable strings (``XSCL-P0xx`` for syntax, ``XSCL-V0xx`` for semantic
checks) listed in ``ERROR_CODES``, so tools and tests can match on them rather
than on wording.

``XsclSyntaxError`` is also a ``SyntaxError`` and ``XsclValidationError`` also
a ``ValueError``, so callers that only know the builtins still catch them.
Errors pickle (they travel to Spark executors and between processes) and turn
into plain JSON with ``to_dict``.
"""

from __future__ import annotations

from typing import Any, TypeVar

_E = TypeVar("_E", bound="XsclError")

#: Stable error codes and their one-line meaning.
ERROR_CODES: dict[str, str] = {
    # Syntax (parser) errors.
    "XSCL-P001": "unexpected character",
    "XSCL-P002": "unterminated string literal",
    "XSCL-P003": "unexpected token",
    "XSCL-P004": "unexpected end of query",
    "XSCL-P005": "invalid window (a decimal number with unit ms, s, m, h or d, or INF)",
    "XSCL-P006": "invalid query id (must match [A-Za-z_][A-Za-z0-9_.-]*)",
    "XSCL-P007": "DECLARE NAMESPACE after the first query",
    "XSCL-P008": "empty query between two ';'",
    "XSCL-P009": "the file holds no query",
    "XSCL-P010": "reserved keyword used as a stream or variable name",
    "XSCL-P011": "invalid function predicate (unbalanced brackets or quotes)",
    "XSCL-P012": "invalid namespace declaration",
    # Semantic (validation) errors.
    "XSCL-V001": "unbound variable in a join predicate",
    "XSCL-V002": "unbound variable in SELECT",
    "XSCL-V003": "variable bound twice",
    "XSCL-V004": "unknown stream",
    "XSCL-V005": "PUBLISH cycle",
    "XSCL-V006": "predicate uses a variable of a later block",
    "XSCL-V007": "duplicate query id",
    "XSCL-V008": "unknown namespace prefix",
    "XSCL-V009": "invalid XPath function predicate",
}

#: Stable error codes of CEL, the event language beside XSCL (docs/cel.md section 7).
#: CEL errors are ``XsclSyntaxError`` / ``XsclValidationError`` with these codes.
CEL_ERROR_CODES: dict[str, str] = {
    # Syntax (parser) errors.
    "CEL-P001": "unexpected character",
    "CEL-P002": "unterminated string literal",
    "CEL-P003": "unexpected token",
    "CEL-P004": "unexpected end of query",
    "CEL-P005": "invalid duration unit (us, ms, s, m, min, h, d)",
    "CEL-P006": "invalid query id (must match [A-Za-z_][A-Za-z0-9_.-]*)",
    "CEL-P007": "DECLARE STREAM after the first query",
    "CEL-P008": "empty query between two ';'",
    "CEL-P009": "the file holds no query",
    "CEL-P010": "reserved keyword used as a name",
    "CEL-P011": "invalid decorator (only $1., $2. and $. before an attribute name)",
    # Semantic (validation) errors.
    "CEL-V001": "unknown attribute",
    "CEL-V002": "ambiguous attribute (in more than one input: decorate it)",
    "CEL-V003": "decorator not allowed here",
    "CEL-V004": "unknown stream",
    "CEL-V005": "resubscription cycle",
    "CEL-V006": "duplicate query id",
    "CEL-V007": "FOLD schema inclusion: the second input has an attribute the first lacks",
    "CEL-V008": "FOLD aggregate names an attribute the first input does not have",
    "CEL-V009": "duplicate attribute name in a schema",
    "CEL-V010": "UNION of streams with different schemas",
    "CEL-V011": "DUR or a duration used other than as 'DUR relop constant' in a predicate",
    "CEL-V012": "a condition where a value is expected, or a value where a condition is",
    "CEL-V013": "conflicting stream schemas (declared twice, or declared and PUBLISHed)",
    "CEL-V014": "unknown function or wrong number of arguments",
    "CEL-V015": "a SELECT expression needs AS name",
}


def line_column(text: str, offset: int) -> tuple[int, int]:
    """1-based (line, column) of ``offset`` in ``text`` (columns count code points)."""
    offset = max(0, min(offset, len(text)))
    line = text.count("\n", 0, offset) + 1
    line_start = text.rfind("\n", 0, offset) + 1
    return line, offset - line_start + 1


def excerpt_at(text: str, offset: int) -> str:
    """The source line holding ``offset`` and a caret line pointing at it.

    Tabs before the column are kept in the caret line so the caret lines up in
    a terminal whatever the tab width. A trailing ``\\r`` is dropped.
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
    """Base class of every XSCL language error; see the module docstring."""

    code: str
    message: str
    qid: str | None
    line: int | None
    column: int | None
    excerpt: str
    expected: tuple[str, ...]
    source: str | None

    def __init__(
        self,
        code: str,
        message: str,
        *,
        qid: str | None = None,
        line: int | None = None,
        column: int | None = None,
        excerpt: str = "",
        expected: tuple[str, ...] = (),
        source: str | None = None,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.qid = qid
        self.line = line
        self.column = column
        self.excerpt = excerpt
        self.expected = tuple(expected)
        self.source = source

    @classmethod
    def at(
        cls: type[_E],
        code: str,
        message: str,
        text: str,
        offset: int,
        *,
        qid: str | None = None,
        expected: tuple[str, ...] = (),
        source: str | None = None,
    ) -> _E:
        """Build an error located at ``offset`` of the source ``text``."""
        line, column = line_column(text, offset)
        return cls(
            code,
            message,
            qid=qid,
            line=line,
            column=column,
            excerpt=excerpt_at(text, offset),
            expected=expected,
            source=source,
        )

    @property
    def location(self) -> str:
        """``[source:]qid:line:column`` with the parts that are known."""
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
            f"{type(self).__name__}({self.code!r}, {self.message!r}, qid={self.qid!r}, "
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

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuild, (type(self), self.to_dict()))


def _rebuild(cls: type[XsclError], fields: dict[str, Any]) -> XsclError:
    """Unpickle helper: rebuild an error from its ``to_dict`` form."""
    fields = dict(fields)
    fields["expected"] = tuple(fields["expected"])
    code = fields.pop("code")
    message = fields.pop("message")
    return cls(code, message, **fields)


class XsclSyntaxError(XsclError, SyntaxError):
    """A query that does not parse (codes ``XSCL-P0xx``).

    The builtin ``SyntaxError`` fields (``lineno``, ``offset``, ``text``,
    ``filename``) are filled too, for generic tooling.
    """

    def __init__(
        self,
        code: str,
        message: str,
        *,
        qid: str | None = None,
        line: int | None = None,
        column: int | None = None,
        excerpt: str = "",
        expected: tuple[str, ...] = (),
        source: str | None = None,
    ) -> None:
        super().__init__(
            code,
            message,
            qid=qid,
            line=line,
            column=column,
            excerpt=excerpt,
            expected=expected,
            source=source,
        )
        syntax_error: SyntaxError = self
        syntax_error.msg = self.headline
        syntax_error.lineno = line
        syntax_error.offset = column
        syntax_error.filename = source
        syntax_error.text = excerpt.split("\n", 1)[0] if excerpt else None


class XsclValidationError(XsclError, ValueError):
    """A query that parses but breaks a rule of the language (codes ``XSCL-V0xx``)."""
