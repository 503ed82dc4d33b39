"""Shared evaluation equals the per-definition oracle on real feed items.

Every file of ``../shared/data/feeds-*`` is read; items/entries are extracted
with lxml and each becomes one document.  Definitions are generated from the
element and attribute names that occur (``/`` and ``//`` paths, ``*``,
attributes, ``text()``, literal and function predicates, pattern edges).  To
stay fast, ``PER_FILE`` item(s) per file are checked, so every file is
covered.
"""

from __future__ import annotations

from collections import Counter
from decimal import Decimal
from pathlib import Path
from typing import Any, cast

import pytest
from lxml import etree

from xscl.lang.ast import (
    Block,
    ComparisonPredicate,
    FunctionPredicate,
    NodeTest,
    NumberLiteral,
    PathPredicate,
    RelPath,
    Step,
    StringLiteral,
)
from xscl.lang.normal_form.model import VarDef
from xscl.xpath import Stage1

PER_FILE = 1
ITEMS = "//*[local-name()='item' or local-name()='entry']"
FEED_SUFFIXES = (".xml", ".rss", ".atom", ".rdf")

pytestmark = pytest.mark.shared_data


def _items(data: Path) -> tuple[int, list[bytes]]:
    parser = etree.XMLParser(resolve_entities=False, no_network=True, load_dtd=False)
    files = sorted(
        p for d in data.glob("feeds-*") for p in d.rglob("*") if p.suffix in FEED_SUFFIXES
    )
    items: list[bytes] = []
    for path in files:
        try:
            tree = etree.parse(str(path), parser)
        except (etree.XMLSyntaxError, OSError):
            continue  # the malformed feeds are covered by the hostile-input tests
        found = cast("list[etree._Element]", tree.xpath(ITEMS))
        items.extend(etree.tostring(item) for item in found[:PER_FILE])
    return len(files), items


def _el(name: str, axis: str = "/", preds: tuple[Any, ...] = ()) -> Step:
    return Step(axis, NodeTest("element", name), predicates=preds)  # type: ignore[arg-type]


def _definitions(items: list[bytes]) -> tuple[list[VarDef], list[tuple[VarDef, VarDef]]]:
    names: Counter[str] = Counter()
    attrs: Counter[str] = Counter()
    values: Counter[str] = Counter()
    for xml in items:
        for el in etree.fromstring(xml).iter(etree.Element):
            names[etree.QName(el).localname] += 1
            for key in el.attrib:
                attrs[etree.QName(key).localname] += 1
            text = (el.text or "").strip()
            if 0 < len(text) < 30:
                values[text] += 1
    top = [n for n, _ in names.most_common(12)]
    top_attrs = [a for a, _ in attrs.most_common(6)]
    common_value = values.most_common(1)[0][0] if values else "x"
    defs: list[VarDef] = []
    edges: list[tuple[VarDef, VarDef]] = []

    def add(*steps: Step) -> VarDef:
        d = VarDef(Block("S", steps))
        defs.append(d)
        return d

    root_item = add(_el("item"))
    root_entry = add(_el("entry"))
    add()  # the root element
    for name in top:
        anywhere = add(_el(name, "//"))
        child = add(_el(name, "//"), _el("*"))
        edges.append((anywhere, child))
        edges.append((root_item, add(_el("item"), _el(name))))
        edges.append((root_entry, add(_el("entry"), _el(name))))
        add(Step("/", NodeTest("wildcard")), _el(name, "//"))
        add(_el(name, "//"), Step("/", NodeTest("text")))
        for attr in top_attrs[:3]:
            edges.append((anywhere, add(_el(name, "//"), Step("/", NodeTest("attribute", attr)))))
    for attr in top_attrs:
        add(Step("//", NodeTest("attribute", attr)))
    for name in top[:8]:
        add(_el(name, "//", (PathPredicate(RelPath((_el("*"),))),)))
        add(
            _el(
                "*",
                "//",
                (ComparisonPredicate(RelPath((_el(name),)), "=", StringLiteral(common_value)),),
            )
        )
        add(_el(name, "//", (ComparisonPredicate(RelPath(()), ">=", StringLiteral("M")),)))
        add(_el(name, "//", (ComparisonPredicate(RelPath(()), "<", NumberLiteral(Decimal(5))),)))
    add(Step("//", NodeTest("wildcard"), predicates=(FunctionPredicate("contains(title, 'a')"),)))
    add(_el("item", "/", (FunctionPredicate("count(*) > 1"),)), _el("title"))
    add(Step("//", NodeTest("attribute", "href")))
    add(
        _el("link", "//"), Step("/", NodeTest("attribute", "href", "{http://www.w3.org/2005/Atom}"))
    )
    add(Step("//", NodeTest("element", "link", "{http://www.w3.org/2005/Atom}")))
    add(Step("//", NodeTest("element", "creator", "{http://purl.org/dc/elements/1.1/}")))
    return defs, edges


def test_feed_items_equal_oracle(shared_data: Path, oracle_class: Any) -> None:
    n_files, items = _items(shared_data)
    assert n_files > 300 and len(items) > 300  # one item of every feed file that has items
    defs, edges = _definitions(items)
    stage = Stage1()
    ids = {d: stage.register(d) for d in defs}
    for var in set(ids.values()):
        stage.require_value(var)
    for parent, child in edges:
        stage.require_pair(ids[parent], ids[child])
    got_values: dict[tuple[str, int], dict[str, str]] = {}
    got_pairs: dict[tuple[str, int, int], set[tuple[str, str]]] = {}
    for i, xml in enumerate(items):
        rows = stage.evaluate_rows("S", str(i), i, xml)
        valued = [node for node, _strval in rows.values]
        assert len(valued) == len(set(valued)), "one values row per node"
        for var, node, strval in rows.r_doc():
            got_values.setdefault((str(i), var), {})[node] = strval
        for var1, var2, node1, node2 in rows.bindings:
            got_pairs.setdefault((str(i), var1, var2), set()).add((node1, node2))
    matched = 0
    for i, xml in enumerate(items):
        oracle = oracle_class(xml)
        for definition, var in ids.items():
            expected = oracle.nodes(definition)
            matched += len(expected)
            assert got_values.get((str(i), var), {}) == expected, (i, definition)
        for parent, child in edges:
            expected_pairs = oracle.pairs(parent, child)
            assert got_pairs.get((str(i), ids[parent], ids[child]), set()) == expected_pairs
    assert matched > 10 * len(items)  # the workload really selects nodes


def test_feed_items_rows_are_the_same_with_warm_caches(shared_data: Path) -> None:
    """The per-node row caches, warm from the second pass on, give exactly the rows
    of the first (cold) pass on every item."""
    _, items = _items(shared_data)
    defs, edges = _definitions(items)
    stage = Stage1()
    ids = {d: stage.register(d) for d in defs}
    for number, var in enumerate(sorted(set(ids.values()))):
        if number % 3:
            stage.require_value(var)
        if number % 2:
            stage.require_nodes(var)
    for parent, child in edges:
        stage.require_pair(ids[parent], ids[child])
    cold = [stage.evaluate_rows("S", str(i), i, xml) for i, xml in enumerate(items)]
    warm = [stage.evaluate_rows("S", str(i), i, xml) for i, xml in enumerate(items)]
    assert warm == cold
    assert sum(sum(map(len, rows)) for rows in warm) > 10 * len(items)
