"""Engine state export/import: a run split anywhere equals one run (and the reference).

The Spark job keeps each group's engine state as ``Engine.export_state`` bytes and
restores it in a fresh engine on whichever worker runs the group next; the two
engines may differ in their optimisations (merged states here, separate there).
"""

from __future__ import annotations

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from tests.cel.strategies import event_lists, programs
from xscl.events.engine import OPTIMISATIONS, Engine, EngineConfig
from xscl.events.envelope import Event
from xscl.events.reference import evaluate
from xscl.lang.cel.parser import parse_file
from xscl.lang.cel.validation import validate


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    text=programs(),
    events=event_lists(),
    cut=st.integers(-1, 8),
    before=st.sets(st.sampled_from(sorted(OPTIMISATIONS))),
    after=st.sets(st.sampled_from(sorted(OPTIMISATIONS))),
)
def test_split_run_equals_reference(
    text: str, events: list[Event], cut: int, before: set[str], after: set[str]
) -> None:
    parsed = parse_file(text)
    program, errors = validate(parsed)
    assume(parsed.ok and not errors)
    cut_micros = cut * 1_000_000
    first = Engine(EngineConfig.without(*before))
    first.subscribe(program)
    got = first.run([e for e in events if e.end <= cut_micros])
    second = Engine(EngineConfig.without(*after))
    second.subscribe(program)
    second.import_state(first.export_state())
    got |= second.run([e for e in events if e.end > cut_micros])
    assert got == evaluate(program, events)


def test_import_needs_a_fresh_engine() -> None:
    program, _ = validate(parse_file("DECLARE STREAM S(a); FROM S NEXT S"))
    engine = Engine()
    engine.subscribe(program)
    engine.run([Event("S", 1, 1, {"a": 1})])
    try:
        engine.import_state(engine.export_state())
    except ValueError as exc:
        assert "processed nothing" in str(exc)
    else:
        raise AssertionError("import into a running engine was accepted")
