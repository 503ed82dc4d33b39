"""A bounded cache of converted output pieces, shared by the result sinks.

A ``SELECT *`` result's XML is joined from pieces (``ResultRecord.xml_parts``)
that every result of the same documents shares; a sink that must convert the
XML (JSON-escape it, make it CDATA) converts each large piece once and joins
bytes. The pieces are the engine's cached serialisations, so their hash is
computed once. The cache starts over when its converted bytes pass the bound.

Example::

    cache = PieceCache(64 * 2**20)
    body = cache.get(piece, escape)      # escape(piece), computed once
"""

from __future__ import annotations

from collections.abc import Callable


class PieceCache:
    """piece -> ``convert(piece)``, at most about ``max_bytes`` of results kept."""

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self._done: dict[str, bytes] = {}
        self._size = 0

    def get(self, piece: str, convert: Callable[[str], bytes]) -> bytes:
        done = self._done.get(piece)
        if done is None:
            done = convert(piece)
            if self._size + len(done) > self.max_bytes:
                self._done.clear()
                self._size = 0
            self._done[piece] = done
            self._size += len(done)
        return done
