"""Channels into CEL: one tuple for every sharable stream it belongs to (Hong 2009 §5.3, §5.4.4).

A **channel** encodes a set of base streams of one schema, *sharable* streams
(§5.3.2, base case 2: sources labelled sharable). A channel tuple is one event
(values, start, end) with a **membership component**, the set of member streams
it is an event of, kept as a bit vector (§5.3.1): one bit per member stream,
unique in the engine, so the masks of two channels never meet. The tuple means
exactly one event of each member stream; the engine's results are those of the
per-stream copies (docs/cel.md §9, "Channels").

How the engine processes a tuple once per automaton edge rather than once per
stream (the m-rules c_⋈ and c_μ of §5.4.4: operators of the same definition
reading sharable first inputs become one m-op whose state holds channel tuples):

* **Encoding at compile time** (``encoding``): a query that reads exactly one
  member of a channel as a *first input* (a stream its automata start from,
  ``compile.first_inputs``) starts from the channel's start state instead of the
  member's. Queries that differ only in which member they read then ask for the
  same states and edges, which prefix merging (§4.5.5) shares; the FR index of the
  channel's start state is probed once per tuple.
* **Masks**: every edge and output a query holds carries the query's mask
  (``query_mask``: the bits of its encoded members; ``ALL`` without any). An edge's
  members are the union of its holders' masks. An instance carries a membership;
  it traverses an edge when the two intersect, and the new instance's membership
  is the intersection (the decoding step of §5.3.1); an output is produced for a
  query only when the instance's membership meets the query's mask (the selection
  m-op over channel D of Example 24). An instance from a plain stream has ``ALL``.
* **Decoding where nothing is shared**: a query that reads several members of one
  channel as first inputs reads them as plain streams, and states reading a member
  as the second input of NEXT/FOLD (which the thesis's m-rules do not share) are
  probed once per member in the membership (``streams_of``).

The membership of an instance and the mask of a query are plain Python ``int``
bit vectors (``ALL`` = -1, every bit set).

>>> channels = Channels()
>>> channels.add("C", ("a",), ("S1", "S2", "S3"))
'@C'
>>> channels.key("S2"), channels.mask(["S1", "S3"]), channels.streams_of("@C", 0b110)
('@C', 5, ['S2', 'S3'])
>>> channels.encoding({"S1", "T"}), channels.encoding({"S1", "S2"})
({'S1': '@C'}, {})
>>> channels.query_mask({"S3": "@C"}), channels.query_mask({})
(4, -1)
>>> ChannelEvent(("S1", "S2"), 5, 5, {"a": 1}).decode()[1]
Event(stream='S2', start=5, end=5, attrs={'a': 1})
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from xscl.events.envelope import Event, Value

__all__ = ["ALL", "ChannelEvent", "Channels"]

#: The membership of an instance from a plain stream, and the mask of a query that
#: reads no channel-encoded stream: every bit.
ALL = -1


@dataclass(frozen=True)
class ChannelEvent:
    """One tuple that is an event of each of ``streams`` (same values and interval).

    What a source hands the engine instead of one ``Event`` per stream when it knows
    the copies are one tuple (a channel line of XSCL results, the RUMOR benchmark's
    channel C). Streams of one engine channel become one channel tuple; the others
    are processed as plain events.
    """

    streams: tuple[str, ...]
    start: int
    end: int
    attrs: Mapping[str, Value]

    def values(self, schema: Sequence[str]) -> tuple[Value, ...]:
        """The values of ``schema``'s attributes in order (null for a missing one)."""
        attrs = self.attrs
        return tuple(attrs.get(name) for name in schema)

    def decode(self) -> list[Event]:
        """The per-stream copies this tuple stands for."""
        return [Event(stream, self.start, self.end, self.attrs) for stream in self.streams]


class Channels:
    """The channels of one engine: members, schemas and the bit of each member stream."""

    def __init__(self) -> None:
        #: channel key (``@name``) -> its member streams, in declaration order
        self.members: dict[str, tuple[str, ...]] = {}
        #: channel key -> the schema every member has
        self.schemas: dict[str, tuple[str, ...]] = {}
        self._key: dict[str, str] = {}
        self._bit: dict[str, int] = {}
        self._next_bit = 0

    def add(self, name: str, schema: tuple[str, ...], streams: Sequence[str]) -> str:
        """Record channel ``name`` over ``streams`` (checked by the engine); its key."""
        key = "@" + name
        self.members[key] = tuple(streams)
        self.schemas[key] = schema
        for stream in streams:
            self._key[stream] = key
            self._bit[stream] = 1 << self._next_bit
            self._next_bit += 1
        return key

    def key(self, stream: str) -> str | None:
        """The key of the channel ``stream`` belongs to (None: a plain stream)."""
        return self._key.get(stream)

    def bit(self, stream: str) -> int:
        """The membership bit of a member stream."""
        return self._bit[stream]

    def mask(self, streams: Iterable[str]) -> int:
        """The membership of a tuple of the member streams ``streams``."""
        mask = 0
        for stream in streams:
            mask |= self._bit[stream]
        return mask

    def streams_of(self, key: str, membership: int) -> list[str]:
        """The member streams of channel ``key`` whose bits ``membership`` has."""
        return [s for s in self.members[key] if membership & self._bit[s]]

    def names(self, membership: int) -> list[str]:
        """Every member stream (of any channel) whose bit ``membership`` has."""
        return [s for s, bit in self._bit.items() if membership & bit]

    def encoding(self, first_inputs: Iterable[str]) -> dict[str, str]:
        """Which of a query's first-input streams it reads through their channel's start.

        A member is encoded when it is the only member of its channel among the
        query's first inputs (then the query's mask tells its tuples apart); a query
        reading two members of one channel reads both as plain streams.
        """
        by_channel: dict[str, list[str]] = {}
        for stream in first_inputs:
            key = self._key.get(stream)
            if key is not None:
                by_channel.setdefault(key, []).append(stream)
        return {found[0]: key for key, found in by_channel.items() if len(found) == 1}

    def query_mask(self, encoded: Mapping[str, str]) -> int:
        """The mask of a query's edges and outputs: its encoded members' bits, else ALL."""
        return self.mask(encoded) if encoded else ALL
