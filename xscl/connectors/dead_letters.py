"""The dead-letter record: a counted, written-out error of a connector (spec section 4).

Bad input never stops a stream: connectors turn each ``ConnectorError`` (and each
failed fetch) into a ``DeadLetter`` and keep going. The codes are ``xscl.errors``'.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from typing import Any

from xscl.errors import ConnectorError, ConnectorIOError


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
