"""A query file's text: UTF-8, or one coded syntax error at the first byte that is not.

XSCL and CEL files are UTF-8 (docs/language.md, docs/cel.md). A file in another
encoding is refused whole, with the line and column of its first bad byte
(``XSCL-P013``, ``CEL-P012`` for an event query file), never decoded by a guess:
a guess would change the string literals the queries compare.

>>> decode_source("Q1: S//a".encode())
'Q1: S//a'
>>> try:
...     decode_source(b"Q1: S//a\\nQ2: S//b[. = 'caf\\xe9'];", source="q.xscl")
... except XsclSyntaxError as error:
...     print(error)
q.xscl:2:18: XSCL-P013 the file is not UTF-8 text: byte 0xE9 (invalid continuation byte); \
save it as UTF-8 (expected: UTF-8 text)
  Q2: S//b[. = 'caf�'];
                   ^
"""

from __future__ import annotations

from pathlib import Path

from xscl.errors import XsclSyntaxError


def decode_source(data: bytes, *, source: str | None = None, code: str = "XSCL-P013") -> str:
    """``data`` as UTF-8 text, or ``code``'s ``XsclSyntaxError`` at the first bad byte."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        text = data.decode("utf-8", "replace")
        offset = len(data[: exc.start].decode("utf-8"))
        raise XsclSyntaxError.from_code(
            code,
            f"the file is not UTF-8 text: byte 0x{data[exc.start]:02X} ({exc.reason}); "
            "save it as UTF-8",
            source=source,
            text=text,
            offset=offset,
            expected=("UTF-8 text",),
        ) from None


def read_source(path: str | Path, *, code: str = "XSCL-P013") -> str:
    """The text of the query file at ``path`` (``OSError`` when it cannot be read)."""
    return decode_source(Path(path).read_bytes(), source=str(path), code=code)
