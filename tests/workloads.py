"""One workload generator for every differential test: queries, documents, arrival.

A *workload* is an XSCL query file and the documents delivered to it, in arrival
order. Every engine's agreement test with ``xscl.reference`` draws its workloads
here: the local engine (``tests/engine_local``), the join groups driven without
Spark (``tests/spark/test_spark_job_groups.py``), the Spark batch engine, the
streaming job and the kill tests (``tests/spark``). What it draws, and why:

* **values** come from one to three *families* of spellings that normalise alike
  or nearly (spec 1 and 3.1): whitespace around and inside, NFC/NFD and
  compatibility forms, case, numbers in the spellings of spec 3.1 and look-alikes
  that are not numbers, empty and blank values, code points beyond the BMP. The
  vocabulary is small and its first value hot, so documents share values and
  joins happen;
* **documents** are plain, Atom and RSS 1.0 items with repeated leaves, nested
  groups, attributes (``k``, ``xml:lang``, ``rdf:about``), mixed text
  (``text()``) and Dublin Core elements; timestamps lie on a few seconds with
  microsecond offsets, so equal timestamps and window edges (``t2 - t1 == T``, one
  microsecond past it) occur; arrival is out of time order or sorted, with
  re-deliveries (same docid, other content and time: the first wins);
* **patterns** use ``/``, ``//``, ``*``, attributes, ``text()``, prefixed names,
  nested predicates, comparisons with string and numeric literals under every
  operator, function predicates, and bound variables of which some join and
  some are existential;
* **queries** are JOIN and FOLLOWED BY chains of 1-3 blocks with 0-3 equalities
  per operator (0: ``TRUE``), windows at the timestamps' edges, SELECT lists,
  PUBLISH streams read by later queries, and queries repeated under other ids
  (the same definitions, some with renamed variables).

``workloads()`` is a Hypothesis strategy: a failure shrinks to a small workload.
``seeded_workload(seed)`` draws the same way from a seed, for tests that can
afford one workload per run (Spark); ``run_seed`` gives them a seed that changes
per run and can be fixed to reproduce one.
"""

from __future__ import annotations

import os
import random
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from hypothesis import strategies as st

from xscl import reference
from xscl.connectors.document import Document, envelope_line
from xscl.engine import LocalEngine

T = TypeVar("T")

ATOM = "http://www.w3.org/2005/Atom"
RSS1 = "http://purl.org/rss/1.0/"
RDF = "http://www.w3.org/1999/02/22-rdf-syntax-ns#"
DC = "http://purl.org/dc/elements/1.1/"
#: The prefixes the generated queries use, and the file header declaring them.
NAMESPACES = (("atom", ATOM), ("rss", RSS1), ("dc", DC))
HEADER = "".join(f'DECLARE NAMESPACE {prefix} = "{uri}";\n' for prefix, uri in NAMESPACES)
STREAMS = ("S", "T")

#: Spellings that normalise alike, or differ by just what the rules keep apart.
FAMILIES: tuple[tuple[str, ...], ...] = (
    # outer XML whitespace is stripped; inner, case and no-break spaces are kept
    ("x", " x", "x\n", "\tx\r\n ", "X", "x y", "x  y", "x\u00a0y", "\u00a0x", "it's", "\u1e8b"),
    # NFC and NFD of one text, with outer space, another case, no accent
    ("caf\u00e9", "cafe\u0301", " caf\u00e9\n", "CAF\u00c9", "cafe"),
    ("Zo\u00eb", "Zoe\u0308", "ZO\u00cb", "Zoe", "Zo\u00eb ", "Zo\u00eb\u0301"),
    # A with ring: precomposed, decomposed, the Angstrom sign (NFC: U+00C5); Hangul
    ("\u00c5", "A\u030a", "\u212b", "\u00e5", "\ud55c", "\u1112\u1161\u11ab"),
    # compatibility forms NFC keeps apart (NFKC would not); combining marks reordered
    ("\ufb01", "fi", "\u1e69", "s\u0323\u0307", "s\u0307\u0323", "\u00b2", "2"),
    # numbers of spec 3.1 and look-alikes that are not numbers
    ("7", "+7", "7.", "7.0", "007", " 7 ", "7e0", "\uff17", "\u0667", "$7", "7\u0301"),
    ("1000", "1e3", "1E3", "1000.000", "1,000", "0x3E8", "1_000", "+1E+0003"),
    ("-0.5", ".5", "-.5", "0.5", "5E-1", "-0", "0", "-"),
    ("INF", "+INF", "-INF", "inf", "Infinity", "NaN", "1e400", "-1e400"),
    # empty and blank: never joins
    ("", " ", "\n\t", "\r\n"),
    # code-point order beyond the BMP (UTF-16 order would differ), markup characters
    ("\U0001f600", "\ufffd", "\ue000", "z", "a<b&c", 'q"'),
)
#: Literals of numeric comparisons (the grammar's plain decimals).
NUMERIC_LITERALS = ("7", "7.0", "0", "-1", "0.5", "-0.5", "1000", "12", "99999999999999999999")
OPERATORS = ("=", "!=", "<", "<=", ">", ">=")
#: Windows at the edges of the timestamps' spacing (``seconds`` + ``JITTERS``).
WINDOWS = ("2s", "0", "1s", "INF", "1.000001s", "0.999999s", "0.000001", "2500ms", "1m")
JITTERS = (0, 0, 1, 999_999, 500_000)


class Var:
    """A variable slot of a generated query: variable ``n`` of block ``block``."""

    __slots__ = ("block", "n")

    def __init__(self, block: int, n: int) -> None:
        self.block, self.n = block, n

    def name(self, letters: str) -> str:
        return f"{letters[self.block]}{self.n}"


#: The comparison slot of a path: `` op literal`` or nothing.
CMP = "\x00cmp"
#: Predicates of a block's first step (strings, with ``Var`` binding slots and CMP).
BRANCHES: tuple[tuple[str, ...], ...] = (
    ("./a", "V", CMP),
    ("./b", "V", CMP),
    ("./c", "V", CMP),
    ("./a", "V", CMP),
    ("./b", "V", CMP),
    (".//a", "V", CMP),
    ("./g/b", "V", CMP),
    ("./g", "V", "[./a", "V", CMP, "]"),
    ("./@k", "V", CMP),
    ("./a/@lang", "V", CMP),
    ("./m/text()", "V", CMP),
    ("./a/text()", "V", CMP),
    (".//text()", "V", CMP),
    (".//text()", "V", CMP),
    (".//@k", "V", CMP),
    ("./dc:creator", "V", CMP),
    ("creator", "V", CMP),
    ("./*", "V", CMP),
    ("@about", "V", CMP),
    ("./g/@k", "V", CMP),
)
#: Predicates of a block over a PUBLISHed stream (``<result>`` of copied elements).
PUBLISHED_BRANCHES: tuple[tuple[str, ...], ...] = (
    (".//a", "V", CMP),
    ("./*/b", "V", CMP),
    (".//@k", "V", CMP),
    ("./var", "V", CMP),
    (".//text()", "V", CMP),
)
ROOTS = ("/item", "/*", "/item", "/*", "/atom:entry", "/rss:item", "//g", "//*")
#: Function predicates (XPath 2.0 on the context node; some raise on some documents,
#: which makes them false: ``contains`` of several ``a``).
FUNCTIONS = (
    "exists(./g)",
    "empty(./c)",
    "not(./b)",
    "count(./a) > 1",
    "contains(string(./a), 'x')",
    "starts-with(@k, '7')",
    "ends-with(string(./c), 'e')",
    "lower-case(string(./b)) = 'x'",
    "string-length(normalize-space(string(.))) > 3",
    "matches(string(@k), '^[+-]?[0-9]')",
    "exists(dc:creator)",
    "contains(./a, 'x')",
    "number(@k)",
)


class Choices(Protocol):
    """Where the generator's decisions come from (Hypothesis, or a seeded random)."""

    def pick(self, options: Sequence[T]) -> T: ...

    def number(self, low: int, high: int) -> int: ...

    def chance(self, percent: int) -> bool: ...

    def shuffled(self, items: Sequence[T]) -> list[T]: ...


class DrawnChoices:
    """Decisions drawn by Hypothesis: they shrink towards the first option, low numbers
    and ``False``."""

    def __init__(self, draw: st.DrawFn) -> None:
        self.draw = draw

    def pick(self, options: Sequence[T]) -> T:
        return self.draw(st.sampled_from(options))

    def number(self, low: int, high: int) -> int:
        return self.draw(st.integers(low, high))

    def chance(self, percent: int) -> bool:
        return self.draw(st.integers(0, 99)) >= 100 - percent

    def shuffled(self, items: Sequence[T]) -> list[T]:
        return list(self.draw(st.permutations(items))) if len(items) > 1 else list(items)


class SeededChoices:
    """Decisions from ``random.Random(seed)``: one workload per seed, the same every time."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)

    def pick(self, options: Sequence[T]) -> T:
        return self.rng.choice(options)

    def number(self, low: int, high: int) -> int:
        return self.rng.randint(low, high)

    def chance(self, percent: int) -> bool:
        return self.rng.randrange(100) < percent

    def shuffled(self, items: Sequence[T]) -> list[T]:
        return self.rng.sample(list(items), len(items))


# ------------------------------------------------------------------ queries
@dataclass(frozen=True)
class QuerySpec:
    """A generated query, rendered with any variable letters (``render``)."""

    blocks: tuple[tuple[str, tuple[Any, ...]], ...]  # (stream, text parts with Var slots)
    ops: tuple[tuple[str, tuple[tuple[Var, Var], ...], str], ...]  # (kind, equalities, window)
    select: tuple[Var, ...] | None
    publish: str | None

    def render(self, qid: str, letters: str = "xyz") -> str:
        blocks = [
            stream + "".join(p if isinstance(p, str) else "->" + p.name(letters) for p in parts)
            for stream, parts in self.blocks
        ]
        text = blocks[0]
        for (kind, equalities, window), block in zip(self.ops, blocks[1:], strict=True):
            condition = " AND ".join(
                f"{a.name(letters)}={b.name(letters)}" for a, b in equalities
            )
            text += f" {kind} {{{condition or 'TRUE'}, {window}}} {block}"
        if self.select is not None:
            text = f"SELECT {', '.join(v.name(letters) for v in self.select)} FROM {text}"
        if self.publish is not None:
            text += f" PUBLISH {self.publish}"
        return f"{qid}: {text}"


def _quote(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


def _comparison(c: Choices, vocabulary: Sequence[str]) -> str:
    literal = (
        c.pick(NUMERIC_LITERALS) if c.chance(50) else _quote(spell(c, c.pick(vocabulary)))
    )
    return f" {c.pick(OPERATORS)} {literal}"


def _path(
    c: Choices, parts: tuple[str, ...], block: int, variables: list[Var], vocabulary: Sequence[str]
) -> list[Any]:
    """One branch's parts: each binding slot bound (or not), the comparison made (or not)."""
    out: list[Any] = []
    for part in parts:
        if part == "V":
            if c.chance(70):
                var = Var(block, len(variables) + 1)
                variables.append(var)
                out.append(var)
        elif part == CMP:
            if c.chance(15):
                out.append(_comparison(c, vocabulary))
        else:
            out.append(part)
    return out


def _block(
    c: Choices, index: int, streams: Sequence[str], vocabulary: Sequence[str]
) -> tuple[tuple[str, tuple[Any, ...]], list[Var]]:
    stream = c.pick(streams)
    published = stream not in STREAMS
    variables: list[Var] = []
    parts: list[Any] = ["/result" if published else c.pick(ROOTS)]
    if c.chance(30):
        variables.append(Var(index, 0))
        parts.append(variables[-1])
    menu = PUBLISHED_BRANCHES if published else BRANCHES
    for _ in range(c.number(0, 3) if c.chance(20) else 1):
        parts += ["[", *_path(c, c.pick(menu), index, variables, vocabulary), "]"]
    if not published and c.chance(10):
        parts.append(f"[{c.pick(FUNCTIONS)}]")
    return (stream, tuple(parts)), variables


def draw_query(
    c: Choices, vocabulary: Sequence[str], published: Sequence[str], publish: str | None
) -> QuerySpec:
    """A query of 1-3 blocks over ``S``, ``T`` and the streams ``published`` so far."""
    streams = (*STREAMS, *published)
    count = c.pick((2, 1, 3, 2))
    blocks: list[tuple[str, tuple[Any, ...]]] = []
    bound: list[list[Var]] = []
    ops: list[tuple[str, tuple[tuple[Var, Var], ...], str]] = []
    for index in range(count):
        block, variables = _block(c, index, streams, vocabulary)
        if index:
            earlier = [v for vs in bound for v in vs]
            equalities: list[tuple[Var, Var]] = []
            if earlier and variables:
                for _ in range(c.number(0, 3) if c.chance(20) else 1):
                    right = c.pick(earlier) if c.chance(10) else c.pick(variables)
                    equalities.append((c.pick(earlier), right))
            unique: dict[tuple[str, str], tuple[Var, Var]] = {}
            for a, b in equalities:
                unique.setdefault((a.name("xyz"), b.name("xyz")), (a, b))
            kind = c.pick(("FOLLOWED BY", "JOIN"))
            ops.append((kind, tuple(unique.values()), c.pick(WINDOWS)))
        blocks.append(block)
        bound.append(variables)
    every = [v for vs in bound for v in vs]
    select = None
    if every and c.chance(30):
        chosen = {c.pick(every) for _ in range(c.number(1, 2))}
        select = tuple(v for v in every if v in chosen)
    return QuerySpec(tuple(blocks), tuple(ops), select, publish)


def draw_queries(c: Choices, vocabulary: Sequence[str], low: int, high: int) -> str:
    """A query file: ``low``..``high`` queries, some publishing, some repeated."""
    specs: list[QuerySpec] = []
    published: list[str] = []
    for index in range(c.number(low, high)):
        publish = f"P{index}" if c.chance(20) else None
        specs.append(draw_query(c, vocabulary, published, publish))
        if publish is not None:
            published.append(publish)
    texts = [spec.render(f"Q{i}") for i, spec in enumerate(specs)]
    if specs and c.chance(30):
        for n in range(c.number(1, 2)):
            texts.append(c.pick(specs).render(f"R{n}", c.pick(("xyz", "uvw"))))
    return HEADER + ";\n".join(texts) + ";\n"


# ---------------------------------------------------------------- documents
def _text(value: str) -> str:
    return value.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace(
        "\r", "&#13;"
    )


def _attribute(value: str) -> str:
    out = _text(value).replace('"', "&quot;")
    return out.replace("\t", "&#9;").replace("\n", "&#10;")


def draw_xml(c: Choices, vocabulary: Sequence[str]) -> str:
    """One item: plain, Atom or RSS 1.0, with values from ``vocabulary`` (first one hot)."""

    def value() -> str:
        return spell(c, vocabulary[0] if c.chance(50) else c.pick(vocabulary))

    children: list[str] = []
    for name in ("a", "b", "c"):
        for _ in range(c.number(0, 2) if c.chance(20) else c.number(1, 2)):
            lang = f' xml:lang="{_attribute(value())}"' if name == "a" and c.chance(40) else ""
            children.append(f"<{name}{lang}>{_text(value())}</{name}>")
    for _ in range(c.number(0, 2)):
        inner = "".join(
            f"<{n}>{_text(value())}</{n}>" for n in ("a", "b") for _ in range(c.number(0, 2))
        )
        k = f' k="{_attribute(value())}"' if c.chance(50) else ""
        children.append(f"<g{k}>{inner}</g>")
    if c.chance(60):
        children.append(f"<m>{_text(value())}<i/>{_text(value())}</m>")
    if c.chance(50):
        children.append(f"<dc:creator>{_text(value())}</dc:creator>")
    body = "".join(c.shuffled(children))
    k = f' k="{_attribute(value())}"' if c.chance(70) else ""
    kind = c.pick(("item", "atom", "rss1", "item"))
    if kind == "atom":
        return f'<entry xmlns="{ATOM}" xmlns:dc="{DC}"{k}>{body}</entry>'
    if kind == "rss1":
        about = _attribute(value())
        return (
            f'<item xmlns="{RSS1}" xmlns:rdf="{RDF}" xmlns:dc="{DC}" rdf:about="{about}"{k}>'
            f"{body}</item>"
        )
    return f'<item xmlns:dc="{DC}"{k}>{body}</item>'


def spell(c: Choices, value: str) -> str:
    """``value`` as written, or decomposed (NFD): the same value to every rule."""
    return unicodedata.normalize("NFD", value) if c.chance(35) else value


def draw_vocabulary(c: Choices) -> list[str]:
    """A few spellings of one or two families; the first is the hot value."""
    spellings = [
        c.pick(family)
        for family in [c.pick(FAMILIES) for _ in range(c.number(1, 2))]
        for _ in range(c.number(2, 4))
    ]
    return list(dict.fromkeys(spellings))


def draw_timestamp(c: Choices) -> int:
    """Whole seconds 0..4 plus a jitter: equal times, edges and one microsecond past."""
    return c.number(0, 4) * 1_000_000 + c.pick(JITTERS)


def draw_documents(
    c: Choices, vocabulary: Sequence[str], low: int, high: int, redeliver: bool
) -> list[Document]:
    docs = [
        Document(c.pick(STREAMS), f"d{i}", draw_timestamp(c), draw_xml(c, vocabulary))
        for i in range(c.number(low, high))
    ]
    if c.chance(30):
        docs.sort(key=lambda d: d.ts_micros)  # in time order (stable: ties as drawn)
    if redeliver and docs and c.chance(25):
        for _ in range(c.number(1, 2)):
            first = c.pick(docs)
            if c.chance(50):  # the same document again
                docs.append(first)
            else:  # the same (stream, docid) with other content and time: ignored
                docs.append(
                    Document(first.stream, first.docid, draw_timestamp(c), draw_xml(c, vocabulary))
                )
    return docs


# ---------------------------------------------------------------- workloads
@dataclass(frozen=True)
class Workload:
    """A query file and the documents delivered to it, in arrival order."""

    text: str
    docs: tuple[Document, ...]

    def __repr__(self) -> str:
        lines = [self.text.removeprefix(HEADER)]
        lines += [f"  {d.stream} {d.docid} ts={d.ts_micros} {d.xml!r}" for d in self.docs]
        return "Workload:\n" + "\n".join(lines)


def draw_workload(
    c: Choices,
    *,
    queries: tuple[int, int] = (1, 4),
    documents: tuple[int, int] = (1, 12),
    redeliver: bool = True,
) -> Workload:
    vocabulary = draw_vocabulary(c)
    text = draw_queries(c, vocabulary, *queries)
    return Workload(text, tuple(draw_documents(c, vocabulary, *documents, redeliver)))


@st.composite
def _workloads(draw: st.DrawFn, options: dict[str, Any]) -> Workload:
    return draw_workload(DrawnChoices(draw), **options)


def workloads(
    *,
    queries: tuple[int, int] = (1, 4),
    documents: tuple[int, int] = (1, 12),
    redeliver: bool = True,
) -> st.SearchStrategy[Workload]:
    """Workloads as a Hypothesis strategy (sizes: inclusive ranges)."""
    return _workloads({"queries": queries, "documents": documents, "redeliver": redeliver})


@st.composite
def _query_texts(draw: st.DrawFn) -> str:
    c = DrawnChoices(draw)
    vocabulary = c.pick(FAMILIES)
    return draw_query(c, vocabulary, (), None).render("A")


def query_texts() -> st.SearchStrategy[str]:
    """One generated query (``A: ...``, over ``S`` and ``T``; its prefixes: ``NAMESPACES``)."""
    return _query_texts()


def seeded_workload(
    seed: int,
    accept: Callable[[Workload], bool] = lambda _: True,
    **options: Any,
) -> tuple[int, Workload]:
    """The workload of the first seed from ``seed`` on that ``accept`` takes, and that seed."""
    for candidate in range(seed, seed + 1000):
        workload = draw_workload(SeededChoices(candidate), **options)
        if accept(workload):
            return candidate, workload
    raise AssertionError(f"no workload of seeds {seed}..{seed + 999} is accepted")


def run_seed(variable: str) -> int:
    """A seed that changes per run, or the one the environment ``variable`` fixes."""
    given = os.environ.get(variable)
    return int(given) if given else random.SystemRandom().randrange(10**6)


# ----------------------------------------------------------------- the oracle
def reference_records(
    text: str, docs: Sequence[Document], lateness: int | None = None
) -> list[dict[str, Any]]:
    """``xscl.reference``'s records for ``docs`` delivered in this order (as JSON dicts)."""
    ref_docs, _dead = reference.read_envelopes(
        [envelope_line(d) for d in docs], allowed_lateness_micros=lateness
    )
    queries = reference.load_queries(text)
    return [r.to_json_dict() for r in reference.evaluate(queries, ref_docs)]


def local_records(
    text: str, docs: Sequence[Document], lateness: int | None = None, limit: int | None = None
) -> list[dict[str, Any]]:
    """The local engine's records (fast: to choose a workload, never as the oracle);
    it stops after the document that took them past ``limit``."""
    engine = LocalEngine(reference.load_queries(text), allowed_lateness_micros=lateness)
    out: list[dict[str, Any]] = []
    for doc in docs:
        out += [r.to_json_dict() for r in engine.process([doc])]
        if limit is not None and len(out) > limit:
            break
    return out


def reference_dead_letters(
    docs: Sequence[Document], lateness: int | None = None
) -> list[reference.DeadLetter]:
    """The documents ``xscl.reference`` dead-letters (late ones under ``lateness``)."""
    return reference.read_envelopes(
        [envelope_line(d) for d in docs], allowed_lateness_micros=lateness
    )[1]
