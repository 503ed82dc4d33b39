"""The dead-letter record: one counted, written-out refusal of an input (docs/errors.md).

Bad input never stops a stream: a connector, an engine's batch run, the reference
and the CEL event readers turn each refused input into a ``DeadLetter`` and keep
going. This is the one record they all write (one JSON line, the same fields in the
same order everywhere), and its code is always one of ``xscl.errors.ERROR_CODES``:
``from_error`` builds it from the coded error, the constructor from a code and a
reason an engine decided on its own.

>>> from xscl.errors import TimestampError
>>> letter = DeadLetter.from_error(TimestampError("bad ts"), source="d.jsonl", line=4)
>>> letter.to_json()
'{"source":"d.jsonl","line":4,"stream":null,"docid":null,"reason":"bad ts","code":"XSCL-C003"}'
>>> DeadLetter(None, 1, None, None, "too old", "late")
Traceback (most recent call last):
  ...
ValueError: a dead letter's code must be in xscl.errors.ERROR_CODES, not 'late'
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from typing import Any

from xscl.errors import ERROR_CODES, XsclError


@dataclass(frozen=True)
class DeadLetter:
    """One refused input (a line of a ``*.deadletter.jsonl`` file).

    ``source`` is the file or URL, ``line`` the 1-based line (JSONL) or item/record
    index (feeds, XML files) when known, ``stream``/``docid`` what is known of the
    document, ``reason`` a human message and ``code`` its stable code.
    """

    source: str | None
    line: int | None
    stream: str | None
    docid: str | None
    reason: str
    code: str

    def __post_init__(self) -> None:
        if self.code not in ERROR_CODES:
            raise ValueError(
                f"a dead letter's code must be in xscl.errors.ERROR_CODES, not {self.code!r}"
            )

    @classmethod
    def from_error(
        cls,
        error: XsclError,
        *,
        source: str | None = None,
        line: int | None = None,
        stream: str | None = None,
        docid: str | None = None,
    ) -> DeadLetter:
        """The dead letter of ``error``; ``source`` and ``line`` default to the error's."""
        return cls(
            error.source if source is None else source,
            error.line if line is None else line,
            stream,
            docid,
            error.message,
            error.code,
        )

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), ensure_ascii=False, separators=(",", ":"))
