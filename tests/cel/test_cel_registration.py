"""Registration in linear time (issue 38): a large ``subscribe`` freezes what it built
instead of collecting the whole heap after each call; dropping subscriptions unfreezes."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

import xscl.events.engine as engine_module
import xscl.lang.gc_pause as gc_pause
from xscl.events.engine import Engine
from xscl.events.envelope import Event
from xscl.lang.cel.parser import parse_file
from xscl.lang.cel.validation import Program, validate

LARGE = 20  # stands for GC_PAUSE_QUERIES (1,000) in these tests


@pytest.fixture
def collections(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[int]]:
    """Large means LARGE queries; every ``gc.collect`` call is recorded; nothing stays
    frozen after the test."""
    monkeypatch.setattr(gc_pause, "GC_PAUSE_QUERIES", LARGE)
    monkeypatch.setattr(engine_module, "GC_PAUSE_QUERIES", LARGE)
    calls: list[int] = []
    collect = gc.collect

    def counted(generation: int = 2) -> int:
        calls.append(generation)
        return collect(generation)

    monkeypatch.setattr(gc, "collect", counted)
    gc.unfreeze()
    yield calls
    gc.unfreeze()


def _chunk(first: int, size: int = LARGE) -> Program:
    text = "DECLARE STREAM S(a, b);\n" + ";\n".join(
        f"q{n}: FROM FILTER{{a = {n}}}(S) NEXT{{$2.b = $1.b}} S" for n in range(first, first + size)
    )
    parsed = parse_file(text)
    program, errors = validate(parsed, text=text)
    assert parsed.ok and not errors
    return program


def test_chunks_are_frozen_not_collected(collections: list[int]) -> None:
    engine = Engine()
    for first in range(0, 3 * LARGE, LARGE):
        engine.subscribe(_chunk(first))
        assert gc.isenabled() and gc.get_freeze_count() > 0
    assert collections == []  # no full pass per subscribe
    events = [Event("S", t, t, {"a": a, "b": 1}) for t, a in ((1, 5), (2, 7), (3, 45))]
    # q5: a=5 then the next b=1; q7: a=7 then the next; q45's a=45 is the last event
    assert {r.query for r in engine.run(events)} == {"q5", "q7"}


def test_dropped_subscriptions_are_unfrozen_and_collected_before_the_next_freeze(
    collections: list[int],
) -> None:
    engine = Engine()
    engine.subscribe(_chunk(0))
    assert gc.get_freeze_count() > 0
    engine.unsubscribe("q3")
    assert gc.get_freeze_count() == 0 and collections == []
    engine.subscribe(_chunk(LARGE))  # frozen again, after one collection of q3's cycles
    assert collections == [2] and gc.get_freeze_count() > 0
    engine.subscribe(_chunk(2 * LARGE))
    assert collections == [2]
    engine.close()
    assert gc.get_freeze_count() == 0
    small = Engine()
    small.subscribe(_chunk(3 * LARGE, size=LARGE - 1))  # below the threshold: as before
    assert gc.get_freeze_count() == 0 and collections == [2]
