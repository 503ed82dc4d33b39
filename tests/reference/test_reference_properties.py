"""Property tests: the reference evaluator against a deliberately naive formulation.

The naive evaluator below shares nothing with ``xscl.reference`` but the spec: it
embeds blocks with lxml XPath (``//*[local-name()='a']``), loops over every
tuple of documents (``itertools.product``) and checks the composite-interval
window rule of spec 3.2 literally. Queries come from a small generator (1-3
blocks, child/attribute predicates with variables, optional comparisons,
0-3 equalities, JOIN/FOLLOWED BY, windows 0, 1 s, 2 s, INF) over documents built
from a tiny alphabet, so that joins, empty values and window edges are common.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import unicodedata
from dataclasses import dataclass

from hypothesis import given
from hypothesis import strategies as st
from lxml import etree

from tests.profiles import examples
from xscl.lang.parser import parse_query
from xscl.reference import Document, evaluate_query, make_document

SECOND = 1_000_000
VALUES = ["", "x", "x", "x", "y", " x "]


# -- random documents --------------------------------------------------------------


@st.composite
def xml_documents(draw: st.DrawFn) -> str:
    def leaf() -> str:
        name = draw(st.sampled_from(["c", "d"]))
        return f"<{name}>{draw(st.sampled_from(VALUES))}</{name}>"

    children = []
    for _ in range(draw(st.integers(1, 3))):
        name = draw(st.sampled_from(["a", "a", "b"]))
        attr = draw(st.sampled_from(["", ' k="x"', ' k="x"', ' k="y"', ' k=""']))
        inner = "".join(leaf() for _ in range(draw(st.sampled_from([0, 1, 1, 2]))))
        children.append(f"<{name}{attr}>{inner}</{name}>")
    return "<r>" + "".join(children) + "</r>"


@st.composite
def document_sets(draw: st.DrawFn) -> list[Document]:
    count = draw(st.integers(3, 5))
    return [
        make_document("S", f"d{i}", draw(st.integers(0, 2)) * SECOND, draw(xml_documents()))
        for i in range(count)
    ]


# -- random queries ------------------------------------------------------------------


@dataclass(frozen=True)
class Pred:
    child: str  # "c", "d", "a", "b" or "@k"
    var: str | None
    literal: str | None  # compare = 'literal' when set


@dataclass(frozen=True)
class RBlock:
    axis: str
    name: str
    var: str | None
    preds: tuple[Pred, ...]

    def text(self) -> str:
        out = f"S{self.axis}{self.name}" + (f"->{self.var}" if self.var else "")
        for p in self.preds:
            path = p.child if p.child.startswith("@") else f"./{p.child}"
            bind = f"->{p.var}" if p.var else ""
            cmp = f" = '{p.literal}'" if p.literal is not None else ""
            out += f"[{path}{bind}{cmp}]"
        return out

    def variables(self) -> list[str]:
        return [v for v in [self.var, *(p.var for p in self.preds)] if v]


@dataclass(frozen=True)
class RQuery:
    blocks: tuple[RBlock, ...]
    ops: tuple[tuple[str, tuple[tuple[str, str], ...], int | None], ...]

    def text(self) -> str:
        out = self.blocks[0].text()
        for (kind, eqs, window), block in zip(self.ops, self.blocks[1:], strict=True):
            pred = " AND ".join(f"{a}={b}" for a, b in eqs) or "TRUE"
            win = "INF" if window is None else f"{window}s"
            out += f" {kind} {{{pred}, {win}}} {block.text()}"
        return out


@st.composite
def queries(draw: st.DrawFn) -> RQuery:
    blocks = []
    for i in range(draw(st.sampled_from([1, 2, 2, 3, 3]))):
        name = draw(st.sampled_from(["r", "a", "a", "b"]))
        children = ["a", "b", "@k"] if name == "r" else ["c", "c", "d", "@k"]
        preds = []
        for j in range(draw(st.sampled_from([0, 1, 1, 2]))):
            child = draw(st.sampled_from(children))
            var = f"v{i}_{j}" if draw(st.integers(0, 3)) else None
            literal = draw(st.sampled_from([None] * 6 + ["x", "y"]))
            preds.append(Pred(child, var, literal))
        var = f"v{i}" if draw(st.booleans()) else None
        # "S/a" can never match (the root is r), so "/" is mostly used with r
        axis = (
            "/"
            if name == "r" and draw(st.booleans())
            else draw(st.sampled_from(["//"] * 5 + ["/"]))
        )
        blocks.append(RBlock(axis, name, var, tuple(preds)))
    ops = []
    for k in range(1, len(blocks)):
        visible = [v for b in blocks[: k + 1] for v in b.variables()]
        earlier = [v for b in blocks[:k] for v in b.variables()]
        eqs: list[tuple[str, str]] = []
        cross = draw(st.integers(0, 3)) > 0
        if cross and earlier and blocks[k].variables():
            # mostly a cross-block value join, so that joins actually happen
            eqs.append(
                (draw(st.sampled_from(earlier)), draw(st.sampled_from(blocks[k].variables())))
            )
        if len(visible) >= 2:
            for _ in range(draw(st.sampled_from([0, 0, 1]))):
                pair = draw(st.lists(st.sampled_from(visible), min_size=2, max_size=2, unique=True))
                eqs.append((pair[0], pair[1]))
        kind = draw(st.sampled_from(["JOIN", "FOLLOWED BY"]))
        ops.append((kind, tuple(eqs), draw(st.sampled_from([0, 1, 2, None, None]))))
    return RQuery(tuple(blocks), tuple(ops))


# -- the naive evaluator -----------------------------------------------------------------


def _norm(text: str) -> str:
    return unicodedata.normalize("NFC", text).strip(" \t\r\n")


def _elements(context: etree._Element | etree._ElementTree, path: str) -> list[etree._Element]:
    found = context.xpath(path)
    assert isinstance(found, list)
    return [item for item in found if isinstance(item, etree._Element)]


def _text(element: etree._Element) -> str:
    """XPath string value via lxml's own XPath ``string()``."""
    return str(element.xpath("string()"))


def _naive_embeddings(block: RBlock, doc: Document) -> list[dict[str, tuple[str, str]]]:
    """Every embedding as {var: (node id, value)}, via lxml XPath."""
    root = etree.fromstring(doc.xml.encode())
    ids = {el: str(i) for i, el in enumerate(root.iter())}
    start = "/*" if block.axis == "/" else "//*"
    tops = _elements(root.getroottree(), f"{start}[local-name()='{block.name}']")
    out: list[dict[str, tuple[str, str]]] = []
    for top in tops:
        options: list[dict[str, tuple[str, str]]] = [{}]
        if block.var:
            options = [{block.var: (ids[top], _norm(_text(top)))}]
        for pred in block.preds:
            if pred.child.startswith("@"):
                raw_hits = [(f"{ids[top]}/@k", top.get("k"))] if top.get("k") is not None else []
            else:
                raw_hits = [
                    (ids[el], _text(el))
                    for el in _elements(top, f"./*[local-name()='{pred.child}']")
                ]
            hits = [(i, _norm(v or "")) for i, v in raw_hits]
            if pred.literal is not None:
                hits = [(i, v) for i, v in hits if v == pred.literal]
            if pred.var is None:
                hits = hits[:1]  # existential: one witness is enough
            options = [{**o, **({pred.var: h} if pred.var else {})} for o in options for h in hits]
        out.extend(options)
    return out


def _window_ok(kind: str, window: int | None, times: list[int], t: int) -> bool:
    start, end = min(times), max(times)
    limit = None if window is None else window * SECOND
    if kind == "FOLLOWED BY":
        return end < t and (limit is None or t - start <= limit)
    return limit is None or max(end, t) - min(start, t) <= limit


def naive(qid: str, query: RQuery, docs: list[Document]) -> set[tuple[object, ...]]:
    join_vars = {v for _, eqs, _ in query.ops for pair in eqs for v in pair}
    results: set[tuple[object, ...]] = set()
    for combo in itertools.product(docs, repeat=len(query.blocks)):
        if len({d.docid for d in combo}) != len(combo):
            continue
        per_block = [_naive_embeddings(b, d) for b, d in zip(query.blocks, combo, strict=True)]
        for chosen in itertools.product(*per_block):
            ok = True
            merged: dict[str, tuple[str, str]] = dict(chosen[0])
            for k, (kind, eqs, window) in enumerate(query.ops, start=1):
                merged.update(chosen[k])
                times = [d.ts_micros for d in combo[:k]]
                if not _window_ok(kind, window, times, combo[k].ts_micros):
                    ok = False
                    break
                if any(not merged[a][1] or merged[a][1] != merged[b][1] for a, b in eqs):
                    ok = False
                    break
            if ok:
                nodes = tuple(sorted((v, merged[v][0]) for v in join_vars))
                results.add((qid, tuple(d.docid for d in combo), nodes))
    return results


def _rid(key: tuple[object, ...]) -> str:
    qid, docids, nodes = key
    payload = [qid, [["S", d] for d in docids], [list(n) for n in nodes]]  # type: ignore[attr-defined]
    text = json.dumps(payload, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def _reference(query: RQuery, docs: list[Document]) -> dict[tuple[object, ...], str]:
    records = evaluate_query(parse_query(query.text(), qid="q1"), docs)
    return {(r.query, tuple(d.docid for d in r.docs), r.nodes): r.result_id for r in records}


@examples(200)
@given(queries(), document_sets())
def test_reference_agrees_with_naive_formulation(query: RQuery, docs: list[Document]) -> None:
    got = _reference(query, docs)
    expected = naive("q1", query, docs)
    assert set(got) == expected, query.text()
    assert all(rid == _rid(key) for key, rid in got.items())


@examples(60)
@given(queries(), document_sets(), st.randoms(use_true_random=False))
def test_results_do_not_depend_on_input_order(query: RQuery, docs: list[Document], rnd) -> None:  # type: ignore[no-untyped-def]
    shuffled = list(docs)
    rnd.shuffle(shuffled)
    assert _reference(query, docs) == _reference(query, shuffled)
