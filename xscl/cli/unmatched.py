"""What a query reads that the spool's documents do not have: a warning, not an error.

A query over a stream the spool never received, or over an element no document of its
stream has (``news/entry`` over items polled in the ``normalized`` form, which are all
``<item>``), gives no result and says nothing. ``xscl subscribe`` and ``xscl serve``
print one line per such block, so the first run does not just show 0 results.

The newest ``SAMPLE`` records are looked at (a spool may hold millions); streams a
query PUBLISHes are never in the spool and are not looked for. Element and attribute
names compare by local name, as unprefixed names match (docs/language.md).
"""

from __future__ import annotations

import sys
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from lxml import etree

from xscl.connectors.spool import SpoolReader
from xscl.connectors.xmlsafe import local_name, safe_parser
from xscl.lang.ast import Query, Step
from xscl.lang.normal_form.paths import iter_steps

#: How many of the spool's newest records are looked at.
SAMPLE = 2_000
#: The children of a ``normalized`` item (docs/language.md), for the hint.
_NORMALIZED_NAMES = frozenset(
    {"item", "title", "link", "id", "author", "category", "summary", "content"}
    | {"published", "updated", "channel"}
)


@dataclass
class StreamNames:
    """The element and attribute local names seen in a stream's sampled documents."""

    documents: int = 0
    elements: set[str] = field(default_factory=set)
    attributes: set[str] = field(default_factory=set)
    forms: set[str] = field(default_factory=set)


def spool_names(spool: str | Path, sample: int = SAMPLE) -> dict[str, StreamNames]:
    """Per stream, the names in the spool's newest ``sample`` documents."""
    reader = SpoolReader(spool)
    end = reader.next_offset()
    names: dict[str, StreamNames] = defaultdict(StreamNames)
    for _offset, doc in reader.iter_range(max(reader.first_offset(), end - sample), end):
        seen = names[doc.stream]
        seen.documents += 1
        if "form" in doc.meta:
            seen.forms.add(doc.meta["form"])
        try:
            root = etree.fromstring(doc.xml.encode("utf-8", "surrogatepass"), safe_parser())
        except (etree.XMLSyntaxError, ValueError):
            continue
        for element in root.iter(etree.Element):
            seen.elements.add(local_name(element.tag))
            seen.attributes.update(local_name(a) for a in element.attrib)
    return dict(names)


def unmatched(
    queries: Iterable[Query], names: dict[str, StreamNames], published: Iterable[str] = ()
) -> list[str]:
    """One line per block of ``queries`` that reads a stream, element or attribute
    the sampled documents do not have (empty when every block can match). Streams the
    queries, or the ``published`` ones, PUBLISH are not looked for."""
    queries = list(queries)
    known = {*published, *(q.publish for q in queries if q.publish is not None)}
    total = sum(s.documents for s in names.values())
    lines: list[str] = []
    for query in queries:
        said_here: set[str] = set()  # one line per fault of a query, not per block
        for block in query.blocks:
            if block.stream in known:
                continue
            where = f"{query.qid} reads stream {block.stream!r}"
            seen = names.get(block.stream)
            if seen is None:
                have = ", ".join(sorted(names)) or "none"
                line = (
                    f"{where}, but none of the spool's {total} newest documents is of it "
                    f"(streams there: {have}); poll it with --stream {block.stream}"
                )
                if line not in said_here:
                    said_here.add(line)
                    lines.append(line)
                continue
            missing = _missing(block.steps, seen)
            if missing:
                said = ", ".join(f"an {kind} {local!r}" for kind, local in missing)
                hint = ""
                if seen.forms == {"normalized"} and any(
                    local not in _NORMALIZED_NAMES for _kind, local in missing
                ):
                    hint = (
                        " (they were polled in the normalized form, one <item> with title, "
                        "link, author...: poll with --form raw to keep the feed's own elements)"
                    )
                line = f"{where}, but none of its {seen.documents} newest documents has "
                line += said + hint
                if line not in said_here:
                    said_here.add(line)
                    lines.append(line)
    return lines


def _missing(steps: tuple[Step, ...], seen: StreamNames) -> list[tuple[str, str]]:
    """(kind, local name) of each element or attribute test no sampled document has."""
    missing: dict[tuple[str, str], None] = {}
    for step in iter_steps(steps):
        test, local = step.test, step.test.local
        if local is None:
            continue
        if test.kind == "element" and local not in seen.elements:
            missing["element", local] = None
        elif test.kind == "attribute" and local not in seen.attributes:
            missing["attribute", local] = None
    return list(missing)


def warn_unmatched(
    command: str, queries: Iterable[Query], spool: str | Path, published: Iterable[str] = ()
) -> int:
    """Print ``unmatched`` for the spool at ``spool`` to stderr, one line each, and
    return how many; a spool that is missing, empty or unreadable is not looked at."""
    try:
        names = spool_names(spool)
    except (OSError, ValueError):  # no spool yet, or a damaged one: 'serve' says so
        return 0
    if not names:
        return 0
    lines = unmatched(queries, names, published)
    for line in lines:
        print(f"xscl {command}: warning: {line}", file=sys.stderr)
    return len(lines)
