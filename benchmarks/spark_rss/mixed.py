"""The *mixed* workload: real feed items of two corpora, subscriptions shaped like real ones.

What a feed user writes, over ``feeds-kagi-smallweb`` (stream ``web``) and
``feeds-stream-youthopp`` (stream ``youth``), both polled in the ``normalized``
form (one ``<item>`` schema for RSS and Atom, docs/language.md):

* **keyword alerts** (one block): ``web/item[contains(title, 'rust')]``,
  ``[matches(title, 'a|b', 'i')]``, ``[starts-with(link, 'https://host/')]``,
  ``[category = 'AI']``;
* **value joins** of two blocks, 1-3 equalities on leaves whose values recur
  (author, category, the channel's title, title, link), within one stream or across
  the two, JOIN or FOLLOWED BY, each block often with a literal or function filter;
  windows finite (1h..30d) on values that repeat a lot, INF on near-unique ones;
* a few **three-block chains** and **PUBLISH pairs** (a query publishing its
  matches and another joining the published stream).

Every literal and keyword is drawn from the items themselves ("values that really
recur"), weighted by how often they occur, so some subscriptions match often and
most rarely: the shape of a real alert service.

``spool_mixed_items`` polls both corpora into one spool in event-time order;
``mixed_subscriptions`` draws the queries (deterministic for a seed).
"""

from __future__ import annotations

import random
import re
import unicodedata
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from lxml import etree

from xscl.connectors import Document, Spool, SpoolReader
from xscl.connectors.poller import Poller, expand_feed_sources
from xscl.connectors.xmlsafe import safe_parser

DATA = Path(__file__).resolve().parents[2] / ".." / "shared" / "data"
#: stream name -> the corpus folder under ``shared/data``
CORPORA = {"web": "feeds-kagi-smallweb", "youth": "feeds-stream-youthopp"}
#: ``ts`` of items without any date (the poller's "first seen"): fixed, so runs repeat
FIRST_SEEN_MICROS = 1_700_000_000_000_000
#: leaves a join may use, and the windows each may take (values that repeat a lot get
#: short windows: an INF join on a category pairs every two items that share it)
JOIN_LEAVES = {
    "author": ("1d", "7d", "30d"),
    "category": ("1h", "1d", "7d"),
    "channel/title": ("1h", "6h", "1d"),
    "title": ("7d", "INF"),
    "link": ("INF",),
}
#: leaves whose values repeat a lot: a join on one always filters its first block too
#: (unfiltered, one such query paired ~47,000 items within a day)
HOT_LEAVES = frozenset({"author", "category", "channel/title"})
#: leaves a literal filter may compare
FILTER_LEAVES = ("author", "category", "channel/title")
#: the share of each query family (the rest: two-block value joins)
KEYWORD_SHARE = 0.25
CHAIN_SHARE = 0.02
PUBLISH_SHARE = 0.01
_WORD = re.compile(r"[A-Za-z][A-Za-z-]{3,}")
_STOP = frozenset(
    (
        "with", "from", "that", "this", "your", "have", "will", "what", "about", "into", "more",
        "than", "when", "they", "their", "been", "were", "after", "over", "just", "some", "also",
        "only", "like", "each", "which",
    )
)


def spool_mixed_items(spool_dir: Path, data: Path = DATA) -> int:
    """Poll both corpora (``normalized``) into ``spool_dir/staging-*``, then replay every
    item in event-time order into ``spool_dir/spool``; the number of items."""
    items: list[Document] = []
    for stream, folder in CORPORA.items():
        staging = spool_dir / f"staging-{stream}"
        with Spool(staging) as spool:
            poller = Poller(spool, stream=stream, now_micros=lambda: FIRST_SEEN_MICROS)
            poller.poll(expand_feed_sources([str(data / folder)]))
        reader = SpoolReader(staging)
        items.extend(doc for _offset, doc in reader.iter_range(0, reader.next_offset()))
    items.sort(key=lambda d: d.ts_micros)  # stable: ties keep poll order
    with Spool(spool_dir / "spool") as spool:
        spool.append(items)
        return spool.next_offset()


@dataclass
class Vocabulary:
    """What the items hold, per stream: leaf values and title words, with counts."""

    values: dict[tuple[str, str], Counter[str]] = field(
        default_factory=lambda: defaultdict(Counter)
    )
    words: dict[str, Counter[str]] = field(default_factory=lambda: defaultdict(Counter))
    hosts: dict[str, Counter[str]] = field(default_factory=lambda: defaultdict(Counter))

    @classmethod
    def of(cls, items: Sequence[Document]) -> Vocabulary:
        vocabulary = cls()
        parser = safe_parser()
        for doc in items:
            try:
                root = etree.fromstring(doc.xml.encode("utf-8"), parser)
            except etree.XMLSyntaxError:
                continue
            for leaf in (*JOIN_LEAVES, *FILTER_LEAVES):
                for node in root.findall(leaf):
                    text = unicodedata.normalize("NFC", (node.text or "").strip())
                    if text and "'" not in text and len(text) <= 120:
                        vocabulary.values[(doc.stream, leaf)][text] += 1
            title = root.findtext("title") or ""
            for word in sorted({w.lower() for w in _WORD.findall(title)} - _STOP):  # repeatable
                vocabulary.words[doc.stream][word] += 1
            link = root.findtext("link") or ""
            if link.startswith(("http://", "https://")):
                host = "/".join(link.split("/")[:3]) + "/"
                if "'" not in host:
                    vocabulary.hosts[doc.stream][host] += 1
        return vocabulary

    def draw(self, rng: random.Random, counter: Counter[str], least: int = 2) -> str:
        """A value that recurs (at least ``least`` times), weighted by its count."""
        pool = [(v, n) for v, n in counter.items() if n >= least] or list(counter.items())
        values, weights = zip(*pool, strict=True)
        return rng.choices(values, weights)[0]


def mixed_subscriptions(count: int, items: Sequence[Document], seed: int) -> list[str]:
    """``count`` query definitions (``mN: ...``) of the mixed workload (module docstring)."""
    rng = random.Random(seed)
    vocabulary = Vocabulary.of(items)
    streams = sorted(CORPORA)
    out: list[str] = []
    number = 0
    while len(out) < count:
        draw = rng.random()
        if draw < PUBLISH_SHARE and len(out) + 2 <= count:
            out.extend(_publish_pair(rng, vocabulary, number))
            number += 2
            continue
        if draw < PUBLISH_SHARE + CHAIN_SHARE:
            out.append(f"m{number}: " + _chain(rng, vocabulary) + ";")
        elif draw < PUBLISH_SHARE + CHAIN_SHARE + KEYWORD_SHARE:
            stream = rng.choice(streams)
            out.append(f"m{number}: {stream}/item->x" + _filter(rng, vocabulary, stream) + ";")
        else:
            out.append(f"m{number}: " + _value_join(rng, vocabulary) + ";")
        number += 1
    return out[:count]


def join_subscriptions(
    count: int, items: Sequence[Document], seed: int, chain_share: float = CHAIN_SHARE
) -> list[str]:
    """``count`` value joins only (``mN: ...``): two blocks with 1-3 equalities, and a
    ``chain_share`` of three-block chains (the join processor's workload,
    ``benchmarks/joins``)."""
    rng = random.Random(seed)
    vocabulary = Vocabulary.of(items)
    out: list[str] = []
    for number in range(count):
        query = _chain(rng, vocabulary) if rng.random() < chain_share else _value_join(
            rng, vocabulary
        )
        out.append(f"m{number}: {query};")
    return out


def chain_subscriptions(count: int, items: Sequence[Document], seed: int) -> list[str]:
    """``count`` chain-heavy query definitions (``mN: ...``, ``benchmarks/chains``):
    about a third keyed three-block chains (one author or one category in every block),
    a fifth chains joined by two values (``_chain``), a fifth joins without a value
    (``{TRUE, w}``), the rest PUBLISH pairs; the first block always filtered."""
    rng = random.Random(seed)
    vocabulary = Vocabulary.of(items)
    out: list[str] = []
    number = 0
    while len(out) < count:
        draw = rng.random()
        if draw < 0.15 and len(out) + 2 <= count:
            out.extend(_publish_pair(rng, vocabulary, number))
            number += 2
            continue
        if draw < 0.55:
            query = _keyed_chain(rng, vocabulary)
        elif draw < 0.78:
            query = _chain(rng, vocabulary)
        else:
            query = _time_join(rng, vocabulary)
        out.append(f"m{number}: {query};")
        number += 1
    return out[:count]


def _keyed_chain(rng: random.Random, vocabulary: Vocabulary) -> str:
    """Three ``web`` items sharing one author (within a day) or one category (within 6
    hours): a chain the job partitions by that value (docs/architecture.md, "Chains
    keyed by a value")."""
    leaf, window = rng.choice((("author", "1d"), ("category", "6h")))
    return (
        f"web/item[./{leaf}->k1]" + _filter(rng, vocabulary, "web")
        + f" FOLLOWED BY {{k1 = k2, {window}}} web/item[./{leaf}->k2]"
        + f" FOLLOWED BY {{k2 = k3, {window}}} web/item[./{leaf}->k3]"
    )  # fmt: skip


def _time_join(rng: random.Random, vocabulary: Vocabulary) -> str:
    """A filtered ``web`` item followed within an hour by a filtered ``youth`` one."""
    return (
        "web/item->x" + _filter(rng, vocabulary, "web")
        + " FOLLOWED BY {TRUE, 1h} youth/item->y" + _filter(rng, vocabulary, "youth")
    )  # fmt: skip


def _stream_pair(rng: random.Random) -> tuple[str, str]:
    """Both blocks' streams: mostly within ``web`` (it has most items), else across."""
    return rng.choice((("web", "web"), ("web", "web"), ("web", "youth"), ("youth", "web")))


def _value_join(rng: random.Random, vocabulary: Vocabulary) -> str:
    left, right = _stream_pair(rng)
    k = rng.choices((1, 2, 3), (0.6, 0.3, 0.1))[0]
    leaves = rng.sample(sorted(JOIN_LEAVES), k)
    window = rng.choice(JOIN_LEAVES[leaves[0]])
    a = "".join(f"[./{leaf}->a{i}]" for i, leaf in enumerate(leaves))
    b = "".join(f"[./{leaf}->b{i}]" for i, leaf in enumerate(leaves))
    if rng.random() < 0.5 or any(leaf in HOT_LEAVES for leaf in leaves):
        a += _filter(rng, vocabulary, left)
    if rng.random() < 0.3:
        b += _filter(rng, vocabulary, right)
    op = rng.choice(("JOIN", "FOLLOWED BY"))
    eqs = " AND ".join(f"a{i} = b{i}" for i in range(k))
    return f"{left}/item->x{a} {op} {{{eqs}, {window}}} {right}/item->y{b}"


def _chain(rng: random.Random, vocabulary: Vocabulary) -> str:
    """Three blocks of ``web``: an author posts, then on the same category, then again."""
    return (
        "web/item[./author->a][./category->c]" + _filter(rng, vocabulary, "web")
        + " FOLLOWED BY {a = a2, 7d} web/item[./author->a2][./category->c2]"
        + " FOLLOWED BY {c2 = c3, 1d} web/item[./category->c3]"
    )  # fmt: skip


def _publish_pair(rng: random.Random, vocabulary: Vocabulary, number: int) -> list[str]:
    """A query publishing pairs of posts by one author within a day, and a query
    joining that stream with a later ``web`` item on the same author."""
    stream = f"P{number}"
    first = (
        f"m{number}: SELECT a, b FROM web/item[./author->a]{_filter(rng, vocabulary, 'web')}"
        f" FOLLOWED BY {{a = b, 1d}} web/item[./author->b] PUBLISH {stream};"
    )
    second = (
        f"m{number + 1}: {stream}/result/var->p[@name = 'a'] FOLLOWED BY {{p = w, 7d}} "
        "web/item[./author->w];"
    )
    return [first, second]


def _filter(rng: random.Random, vocabulary: Vocabulary, stream: str) -> str:
    """One filter of a block of ``stream``: a literal comparison or a content function."""
    kind = rng.choices(
        ("literal", "contains", "lower", "starts", "matches"), (0.35, 0.3, 0.15, 0.1, 0.1)
    )[0]
    if kind == "literal":
        leaf = rng.choice(FILTER_LEAVES)
        counter = vocabulary.values[(stream, leaf)] or vocabulary.values[(stream, "category")]
        return f"[./{leaf} = '{vocabulary.draw(rng, counter)}']"
    words = vocabulary.words[stream]
    if kind == "contains":
        return f"[contains(title, '{vocabulary.draw(rng, words)}')]"
    if kind == "lower":
        return f"[contains(lower-case(title), '{vocabulary.draw(rng, words)}')]"
    if kind == "starts":
        return f"[starts-with(link, '{vocabulary.draw(rng, vocabulary.hosts[stream])}')]"
    one, two = vocabulary.draw(rng, words), vocabulary.draw(rng, words)
    return f"[matches(title, '{one}|{two}', 'i')]"


def write_queries(path: Path, queries: Sequence[str]) -> None:
    """One query per line, a header comment saying where they come from."""
    header = "-- generated by benchmarks/spark_rss/mixed.py (the mixed workload)\n"
    path.write_text(header + "\n".join(queries) + "\n", encoding="utf-8")
