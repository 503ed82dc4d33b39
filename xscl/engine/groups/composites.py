"""A composite event: a chain's match of its first blocks, on its way to the next hop.

A composite-placed chain (``placements.COMPOSITE``) is matched one hop at a time
(``hop_chains``). The match of blocks 0..j found in the group of hop j's value is a
composite event (spec 3.2): its template, its **path** (the value of each hop edge so
far: digests, ``codec``), its documents in block order (as the groups store them,
``codec``) and its **exits**, the values hop j + 1 can join it by. It leaves the group
as a document of the reserved stream ``xscl.composite`` (``COMPOSITE_STREAM``), which
the job's commit appends to the published spool; the next micro-batch routes it to the
group of each exit value (``routing``), where it is stored under ``event_label(v)``
and meets the documents stored there under ``doc_label(v)``. Both labels are placed
by ``doc_label(v)``, so they share a group.

Its id is made of the template, the path and the documents' sequence numbers: the spool
keeps the first document of an id, so a replayed batch adds nothing; two composite
events of the same documents found by different hop values are different events, and
a full match is found only through the one whose path is its own hop values.

Where it runs: made in the value groups (executors), carried through the driver's
commit as text, read back in the source tasks; pure functions and plain values.

>>> from xscl.templates.canonical import Template
>>> t = Template(("JOIN", "JOIN"), (0, 1, 2), (-1, -1, -1), (True, True, True),
...              ((0, 1), (1, 2)))
>>> event = Composite(t, ("ab",), (7, 9), (b"d7", b"d9"), ("cd",), 120)
>>> Composite.decode(event.encode()) == event, len(event.event_id())
(True, 32)
>>> doc_label("cd"), event_label("cd"), is_hop_label("^cd"), is_hop_label("cd")
('~cd', '^cd', True, False)
"""

from __future__ import annotations

import base64
import hashlib
import marshal
from dataclasses import dataclass

from xscl.lang.validation import RESERVED_STREAM
from xscl.templates.canonical import Template

#: The stream composite events travel as through the published spool (a query may not
#: name it: ``XSCL-V012``).
COMPOSITE_STREAM = RESERVED_STREAM
_DOC = "~"
_EVENT = "^"


def doc_label(value: str) -> str:
    """The label a document is stored under, and probes, for a hop of value ``value``
    (it also places a composite event of that value: both meet in its group)."""
    return _DOC + value


def event_label(value: str) -> str:
    """The label a composite event waiting for hop value ``value`` is stored under."""
    return _EVENT + value


def is_hop_label(label: str) -> bool:
    """A label of the composite chains (never a value digest, key or time label)."""
    return label[:1] in (_DOC, _EVENT)


def hop_value(label: str) -> str:
    """The value of a hop label."""
    return label[1:]


def is_event_label(label: str) -> bool:
    return label[:1] == _EVENT


def is_doc_label(label: str) -> bool:
    return label[:1] == _DOC


@dataclass(frozen=True)
class Composite:
    """See the module docstring."""

    template: Template
    #: the value of hop 1, 2, ..., j's edge (digests)
    path: tuple[str, ...]
    #: the documents' sequence numbers, in block order
    seqs: tuple[int, ...]
    #: the documents as the groups store them (``codec``), in block order
    members: tuple[bytes, ...]
    #: the values the next hop can join it by (digests)
    exits: tuple[str, ...]
    #: the latest timestamp of its documents (its interval's end)
    end: int

    def event_id(self) -> str:
        """Stable across processes: the template, the path and the documents."""
        t = self.template
        key = (t.kinds, t.blocks, t.parents, t.documents, t.value_edges, self.path, self.seqs)
        return hashlib.blake2b(marshal.dumps(key), digest_size=16).hexdigest()

    def encode(self) -> str:
        """As the text of a published document."""
        t = self.template
        fields = (
            (t.kinds, t.blocks, t.parents, t.documents, t.value_edges),
            self.path,
            self.seqs,
            self.members,
            self.exits,
            self.end,
        )
        return base64.b64encode(marshal.dumps(fields)).decode("ascii")

    @classmethod
    def decode(cls, text: str | bytes) -> Composite:
        template, path, seqs, members, exits, end = marshal.loads(base64.b64decode(text))
        return cls(Template(*template), path, seqs, members, exits, end)
