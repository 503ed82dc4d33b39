"""Random workloads (documents + queries) for the local-engine tests.

Documents follow a small schema with both a flat part (``item`` with leaves
``a``, ``b``, ``c`` and an attribute ``k``) and a nested part (``g`` groups with
``a``/``b`` leaves), over a tiny value alphabet that includes the empty string,
so that value joins, empty values, repeated leaves and nested embeddings all
occur. Queries are XSCL text: 1-3 blocks from a menu of patterns, JOIN or
FOLLOWED BY, windows 0 .. INF, 0-4 value joins per operator, SELECT * or a
variable list.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

VALUES = ("x", "y", "z", "")

#: Block patterns: (text with {s} stream and {p} var prefix, variables bound).
PATTERNS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("{s}/item[./a->{p}1][./b->{p}2]", ("1", "2")),
    ("{s}/item->{p}0[./a->{p}1]", ("0", "1")),
    ("{s}//a->{p}1", ("1",)),
    ("{s}/item[./g->{p}0[./a->{p}1][./b->{p}2]][./c->{p}3]", ("0", "1", "2", "3")),
    ("{s}/item[./g[./a->{p}1]][./c->{p}2]", ("1", "2")),
    ("{s}/item[./c]", ()),
    ("{s}/item[./@k->{p}1][./c->{p}2]", ("1", "2")),
    ("{s}//g[./b->{p}1]", ("1",)),
)
WINDOWS = ("0", "2s", "5s", "INF", "3500ms")


@dataclass(frozen=True)
class Doc:
    stream: str
    docid: str
    ts_micros: int
    xml: str


def random_document(rng: random.Random, docid: str) -> Doc:
    def leaf(name: str) -> str:
        return f"<{name}>{rng.choice(VALUES)}</{name}>"

    parts = [leaf(n) for n in ("a", "b", "c") for _ in range(rng.randint(0, 2))]
    rng.shuffle(parts)
    for _ in range(rng.randint(0, 2)):
        inner = [leaf(n) for n in ("a", "b") for _ in range(rng.randint(0, 2))]
        parts.append("<g>" + "".join(inner) + "</g>")
    attr = f' k="{rng.choice(VALUES)}"' if rng.random() < 0.6 else ""
    xml = f"<item{attr}>" + "".join(parts) + "</item>"
    return Doc(rng.choice(("S", "T")), docid, rng.randint(0, 8) * 1_000_000, xml)


def random_query(rng: random.Random, qid: str, blocks: int) -> str:
    texts: list[str] = []
    bound: list[list[str]] = []
    for index in range(blocks):
        pattern, names = rng.choice(PATTERNS)
        prefix = "xyz"[index]
        texts.append(pattern.format(s=rng.choice(("S", "T")), p=prefix))
        bound.append([f"{prefix}{n}" for n in names])
    expr = texts[0]
    for index in range(1, blocks):
        earlier = [v for b in bound[:index] for v in b]
        here = bound[index]
        equalities: list[str] = []
        if earlier and here:
            for _ in range(rng.randint(0 if rng.random() < 0.15 else 1, 4)):
                equalities.append(f"{rng.choice(earlier)}={rng.choice(here)}")
        predicate = " AND ".join(dict.fromkeys(equalities)) or "TRUE"
        kind = rng.choice(("JOIN", "FOLLOWED BY"))
        expr += f" {kind} {{{predicate}, {rng.choice(WINDOWS)}}} {texts[index]}"
    variables = [v for b in bound for v in b]
    if variables and rng.random() < 0.35:
        chosen = rng.sample(variables, rng.randint(1, min(2, len(variables))))
        return f"{qid}: SELECT {', '.join(chosen)} FROM {expr}"
    return f"{qid}: {expr}"


def random_workload(seed: int, queries: int = 4, documents: int = 8) -> tuple[str, list[Doc]]:
    rng = random.Random(seed)
    text = ";\n".join(
        random_query(rng, f"Q{i}", rng.choice((1, 2, 2, 2, 3))) for i in range(queries)
    )
    docs = [random_document(rng, f"d{i}") for i in range(documents)]
    return text, docs
