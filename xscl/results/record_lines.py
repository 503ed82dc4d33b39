"""How a task turns its result records into part lines: plain, or channels.

One protocol (``RecordLines``), two implementations:

* ``PlainLines``: one spec section 4 line per record (``JsonLineEncoder.encode``);
* ``ChannelLines``: a run of consecutive records of one match (same documents,
  nodes, values and XML but for the query's ``<result>`` tag) becomes one channel
  line naming each record's query and result id (``results.channels``); a record
  alone, or whose XML is not shaped ``<result query="…">…</result>``, stays plain.

Why consecutive runs: the records of one match for many queries are made together
(a trie leaf's R_T rows sharing one template, ``engine.matcher``: thesis §5.3's
m-op output, one tuple for the queries of its channel), so a run finds them without
holding the task's records (a heavy batch's are gigabytes), and each query's records
keep exactly the order they were made in.

Each ``add``/``flush`` returns ``(line, records)`` pairs: the line to write and how
many records it holds (a part's row count is its records, not its lines).

Where it runs: executors, in the task that stages a result part
(``group_parts.PartWriter``), once per record; nothing here is pickled (the writer is
built in the task from ``GroupParts.channels``).
"""

from __future__ import annotations

from typing import Protocol

from xscl.engine.json_lines import JsonLineEncoder
from xscl.engine.output import ResultRecord
from xscl.results.channels import shared_xml

#: (a part line, newline included; how many records it holds)
Line = tuple[bytes, int]
#: Members of one channel line at most (a line stays a bounded read).
MAX_MEMBERS = 4096


class RecordLines(Protocol):
    """Result records in, part lines out."""

    def add(self, record: ResultRecord) -> list[Line]:
        """The lines complete once ``record`` is taken (maybe none yet)."""

    def flush(self) -> list[Line]:
        """The lines of every record taken and not yet returned."""


class PlainLines:
    """One line per record."""

    def __init__(self, encoder: JsonLineEncoder) -> None:
        self.encoder = encoder

    def add(self, record: ResultRecord) -> list[Line]:
        return [(self.encoder.encode(record), 1)]

    def flush(self) -> list[Line]:
        return []


class ChannelLines:
    """One channel line per run of records of one match (see the module docstring)."""

    def __init__(self, encoder: JsonLineEncoder) -> None:
        self.encoder = encoder
        self._run: list[ResultRecord] = []
        self._key: tuple[object, ...] = ()
        self._body: tuple[str, ...] = ()

    def add(self, record: ResultRecord) -> list[Line]:
        parts = record.xml_parts if record.xml_parts is not None else (record.xml,)
        body = shared_xml(record.query, parts)
        if body is None:
            lines = self.flush()
            lines.append((self.encoder.encode(record), 1))
            return lines
        key = (record.docs, record.nodes, record.values, body)
        if self._run and key == self._key and len(self._run) < MAX_MEMBERS:
            self._run.append(record)
            return []
        lines = self.flush()
        self._run, self._key, self._body = [record], key, body
        return lines

    def flush(self) -> list[Line]:
        run, body = self._run, self._body
        if not run:
            return []
        self._run, self._key, self._body = [], (), ()
        if len(run) == 1:
            return [(self.encoder.encode(run[0]), 1)]
        return [(self.encoder.encode_channel(run, body), len(run))]


def record_lines(channels: bool, encoder: JsonLineEncoder) -> RecordLines:
    """The lines writer of a task: channels, or one line per record."""
    return ChannelLines(encoder) if channels else PlainLines(encoder)
