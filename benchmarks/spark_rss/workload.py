"""The workload of the Spark RSS benchmark: real feed items in a spool, generated subscriptions.

* ``spool_feed_items``: every feed of ``shared/data/feeds-*`` polled with the project's
  own poller (``xscl.connectors.poller.Poller``, ``raw`` form, one stream ``feed``)
  into a staging spool (deduplicated by docid), then replayed in event-time order
  into the benchmark's spool: one stream, as a feed reader would see it over time.
* ``leaf_stats`` / ``selective_leaves``: the item leaves (childless element children
  with text), most frequent first, keeping those whose values repeat little: the
  "schema" of the thesis's section 6.6.3 (there: five near-unique leaves).
* ``subscriptions``: queries generated as in thesis 6.6.1 (Figure 6.17): k ~ Zipf(s)
  over 1..3 value joins, k leaves chosen uniformly per side, joined position by
  position ``a_i = b_i``; operator JOIN or FOLLOWED BY (even odds), window ``INF``.
  The item pattern is ``feed/*`` so RSS ``item`` and Atom ``entry`` both match.
"""

from __future__ import annotations

import random
import unicodedata
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from lxml import etree

from xscl.connectors import Document, Spool, SpoolReader
from xscl.connectors.poller import Poller, PollSummary, expand_feed_sources
from xscl.connectors.xmlsafe import safe_parser

DATA = Path(__file__).resolve().parents[2] / ".." / "shared" / "data"
STREAM = "feed"
#: ``ts`` of items without any date (the poller's "first seen"): fixed, so runs repeat
FIRST_SEEN_MICROS = 1_700_000_000_000_000
MAX_JOINS = 3


def feed_folders(data: Path = DATA) -> list[Path]:
    """The ``feeds-*`` folders of the shared test data (sorted)."""
    return sorted(p for p in data.glob("feeds-*") if p.is_dir())


def spool_feed_items(folders: Sequence[Path], spool_dir: Path) -> tuple[int, PollSummary]:
    """Poll ``folders`` into ``spool_dir/staging``, replay by ts into ``spool_dir/spool``.

    Returns the number of items in the benchmark spool and the poll summary.
    """
    staging = spool_dir / "staging"
    with Spool(staging) as spool:
        poller = Poller(spool, stream=STREAM, form="raw", now_micros=lambda: FIRST_SEEN_MICROS)
        summary = poller.poll(expand_feed_sources(str(f) for f in folders))
    reader = SpoolReader(staging)
    items = [doc for _offset, doc in reader.iter_range(0, reader.next_offset())]
    items.sort(key=lambda d: d.ts_micros)  # stable: ties keep poll order
    with Spool(spool_dir / "spool") as spool:
        spool.append(items)
        count = spool.next_offset()
    return count, summary


def read_items(spool: Path) -> list[Document]:
    """The spool's documents in offset order."""
    reader = SpoolReader(spool)
    return [doc for _offset, doc in reader.iter_range(0, reader.next_offset())]


@dataclass(frozen=True)
class Leaf:
    """One leaf name of the items: in how many items, and how often its values repeat."""

    name: str
    items: int
    #: ordered pairs of distinct items with an equal (non-empty) value of this leaf:
    #: the results of one ``x = x`` query over the whole stream with window INF
    pairs: int


def leaf_stats(items: Sequence[Document]) -> list[Leaf]:
    """Every leaf name of the items (childless element children with text), most frequent first.

    Values are compared as the engine does (NFC, outer whitespace stripped).
    """
    values: dict[str, Counter[str]] = defaultdict(Counter)
    parser = safe_parser()
    for doc in items:
        try:
            root = etree.fromstring(doc.xml.encode("utf-8"), parser)
        except etree.XMLSyntaxError:
            continue
        seen: dict[str, set[str]] = defaultdict(set)
        for child in root:
            if isinstance(child.tag, str) and len(child) == 0:
                value = unicodedata.normalize("NFC", (child.text or "").strip())
                if value:
                    seen[etree.QName(child).localname].add(value)
        for name, found in seen.items():
            values[name].update(found)
    out = []
    for name, counts in values.items():
        with_leaf = sum(counts.values())
        pairs = sum(n * (n - 1) for n in counts.values())
        out.append(Leaf(name, with_leaf, pairs))
    out.sort(key=lambda leaf: (-leaf.items, leaf.name))
    return out


def selective_leaves(stats: Sequence[Leaf], top: int, max_pairs: int) -> list[Leaf]:
    """The ``top`` most frequent leaves whose ``x = x`` self-join has at most ``max_pairs`` pairs.

    With window INF a join on a repetitive leaf (``category``, ``creator``) yields every
    pair of items sharing a value: 10^4..10^6 results per query, and with thousands of
    queries the run measures result serialisation, not joins. Thesis 6.6.3's leaves
    (item_url, title, timestamp, description, ...) are near-unique per item too.
    """
    return [leaf for leaf in stats if leaf.pairs <= max_pairs][:top]


def zipf_k(rng: random.Random, top: int, s: float) -> int:
    """k in 1..top with P(k) proportional to 1/k^s (thesis 6.6.1)."""
    weights = [1.0 / (k**s) for k in range(1, top + 1)]
    return rng.choices(range(1, top + 1), weights)[0]


def subscriptions(
    count: int,
    leaves: Sequence[str],
    seed: int,
    zipf: float = 0.8,
    min_joins: int = 1,
    window: str = "INF",
) -> list[str]:
    """``count`` XSCL query definitions (``fN: ...``), generated as in thesis 6.6.1.

    ``min_joins`` > 1 draws k from ``min_joins..3`` only; ``window`` replaces INF (the
    benchmark's *selective* workload uses a short one: few pairs of items qualify).
    """
    rng = random.Random(seed)
    out = []
    top = min(MAX_JOINS, len(leaves))
    for number in range(count):
        k = min_joins - 1 + zipf_k(rng, top - min_joins + 1, zipf)
        sides = []
        for prefix in "ab":
            chosen = rng.sample(list(leaves), k)
            preds = "".join(f"[./{leaf}->{prefix}{i + 1}]" for i, leaf in enumerate(chosen))
            sides.append(f"{STREAM}/*{preds}")
        op = rng.choice(("JOIN", "FOLLOWED BY"))
        eqs = " AND ".join(f"a{i + 1} = b{i + 1}" for i in range(k))
        out.append(f"f{number}: {sides[0]} {op} {{{eqs}, {window}}} {sides[1]};")
    return out


def write_queries(path: Path, queries: Sequence[str]) -> None:
    """One query per line, a header comment saying where they come from."""
    header = "-- generated by benchmarks/spark_rss/workload.py (thesis 6.6.1, windows INF)\n"
    path.write_text(header + "\n".join(queries) + "\n", encoding="utf-8")
