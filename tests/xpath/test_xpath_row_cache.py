"""The per-node row caches of ``Stage1.evaluate_rows`` stay bounded and exact."""

from __future__ import annotations

from xscl.lang.ast import Block, NodeTest, Step
from xscl.lang.normal_form.model import VarDef
from xscl.xpath import Stage1
from xscl.xpath.emission import ROW_CACHE_ROWS, cache_rows


def test_row_cache_clears_before_exceeding_its_bound() -> None:
    """Every entry of one cache has as many rows (one per var id): the bound holds."""
    for width in (1, 7, 1000, 2 * ROW_CACHE_ROWS):
        cache: dict[str, tuple[tuple[int, str], ...]] = {}
        rows = tuple((var, "n") for var in range(width))
        inserted = 3 * max(ROW_CACHE_ROWS // width, 1)
        for i in range(inserted):
            assert cache_rows(cache, str(i), rows) is rows
            assert len(cache) == 1 or sum(map(len, cache.values())) <= ROW_CACHE_ROWS
        assert cache[str(inserted - 1)] is rows
        assert len(cache) < inserted


def test_many_elements_in_one_state_keep_the_caches_bounded() -> None:
    """A large document (every ``b`` in one DFA state, each its own node id)."""
    b = NodeTest("element", "b")
    stage = Stage1()
    defs = [VarDef(Block("S", (Step("//", b),) * depth)) for depth in (1, 2)]
    ids = [stage.register(d) for d in defs]
    stage.require_value(ids[0])
    stage.require_nodes(ids[0])
    stage.require_value(ids[1])
    stage.require_pair(ids[0], ids[1])
    xml = "<a>" + "<b>x<b>y</b></b>" * 12_000 + "</a>"
    rows = stage.evaluate_rows("S", "d", 1, xml)
    assert len(rows.matches) == 24_000
    assert rows == stage.evaluate_rows("S", "d", 1, xml)  # from the caches, the same
    automaton = stage._automata["S"]
    states = list(automaton._states.values())
    emissions = [s.output for s in states if s.output is not None]
    assert emissions
    for emission in emissions:
        for cache in (emission.value_rows, emission.node_rows):
            assert sum(map(len, cache.values())) <= ROW_CACHE_ROWS
        for group in emission.fixed_pairs:
            assert sum(map(len, group.rows.values())) <= ROW_CACHE_ROWS
