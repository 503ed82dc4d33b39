"""Random workloads (documents + queries) for the local-engine tests.

Documents follow a small schema with both a flat part (``item`` with leaves
``a``, ``b``, ``c`` and an attribute ``k``) and a nested part (``g`` groups with
``a``/``b`` leaves), over a tiny value alphabet that includes the empty string,
so that value joins, empty values, repeated leaves and nested embeddings all
occur. Queries are XSCL text: 1-3 blocks from a menu of patterns, JOIN or
FOLLOWED BY, windows 0 .. INF, 0-4 value joins per operator, SELECT * or a
variable list.

With ``numbers=True`` about a quarter of the values are numbers of spec 3.1
in their various spellings (signs, ``7.``, ``.5``, exponents, ``INF``, outer
whitespace) or look like numbers but are not (``NaN``, ``1,000``, ``0x10``,
fullwidth and Arabic-Indic digits), and the menu also has patterns comparing
a path with a numeric (or string) literal, so that the engines' number
parsing is held to the reference's.  Without it (the default) a seed gives
the same workload as before numbers were added, which the fixed-seed tests
(``tests/spark``) rely on.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

VALUES = ("x", "y", "z", "")
#: numbers (spec 3.1) and things that are not (``numbers=True``: a quarter of the values)
NUMBERS = (
    "7", "+7", "7.", "-0.5", ".5", "1e3", "1000", "2.5E-2", "INF", "-INF", " 12 ",
    "NaN", "1,000", "0x10", "\uff17", "\u0667",
)  # fmt: skip
#: comparisons for ``{cmp}`` in the patterns, numeric literals mostly
COMPARISONS = (
    "> 5", ">= 7", "= 7", "= 1000", "!= 1000", "< 0", "<= 0.5", "> -1000000000000",
    "!= 'x'", "< 'y'",
)  # fmt: skip

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
#: With ``numbers=True`` also these ({c} and {d}: comparisons from COMPARISONS).
NUMERIC_PATTERNS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("{s}/item[./a->{p}1][./c {c}]", ("1",)),
    ("{s}//a->{p}1[. {c}]", ("1",)),
    ("{s}/item[./b->{p}1 {c}][./@k {d}]", ("1",)),
    ("{s}/item->{p}0[./a {c}][./a {d}]", ("0",)),
)
WINDOWS = ("0", "2s", "5s", "INF", "3500ms")


@dataclass(frozen=True)
class Doc:
    stream: str
    docid: str
    ts_micros: int
    xml: str


def random_document(rng: random.Random, docid: str, numbers: bool = False) -> Doc:
    def value() -> str:
        if numbers and rng.random() < 0.25:
            return rng.choice(NUMBERS)
        return rng.choice(VALUES)

    def leaf(name: str) -> str:
        return f"<{name}>{value()}</{name}>"

    parts = [leaf(n) for n in ("a", "b", "c") for _ in range(rng.randint(0, 2))]
    rng.shuffle(parts)
    for _ in range(rng.randint(0, 2)):
        inner = [leaf(n) for n in ("a", "b") for _ in range(rng.randint(0, 2))]
        parts.append("<g>" + "".join(inner) + "</g>")
    attr = f' k="{value()}"' if rng.random() < 0.6 else ""
    xml = f"<item{attr}>" + "".join(parts) + "</item>"
    return Doc(rng.choice(("S", "T")), docid, rng.randint(0, 8) * 1_000_000, xml)


def random_query(rng: random.Random, qid: str, blocks: int, numbers: bool = False) -> str:
    menu = PATTERNS + NUMERIC_PATTERNS if numbers else PATTERNS
    texts: list[str] = []
    bound: list[list[str]] = []
    for index in range(blocks):
        pattern, names = rng.choice(menu)
        prefix = "xyz"[index]
        stream = rng.choice(("S", "T"))
        if "{c}" in pattern:
            c, d = rng.choice(COMPARISONS), rng.choice(COMPARISONS)
            texts.append(pattern.format(s=stream, p=prefix, c=c, d=d))
        else:
            texts.append(pattern.format(s=stream, p=prefix))
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


def random_workload(
    seed: int, queries: int = 4, documents: int = 8, numbers: bool = False
) -> tuple[str, list[Doc]]:
    rng = random.Random(seed)
    text = ";\n".join(
        random_query(rng, f"Q{i}", rng.choice((1, 2, 2, 2, 3)), numbers) for i in range(queries)
    )
    docs = [random_document(rng, f"d{i}", numbers) for i in range(documents)]
    return text, docs
