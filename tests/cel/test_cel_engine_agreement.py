"""The engine agrees with the reference evaluator (set equality), whatever optimisations are on.

Random programs (tests/cel/strategies.py) cover FILTER, NEXT and FOLD nested,
UNION, DUR, aggregates, SELECT, resubscription (by PUBLISH and internal) and
equal or overlapping timestamps; each example turns a random subset of the
optimisations off (merging, AN, AI, FR index).
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


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    text=programs(),
    events=event_lists(),
    off=st.sets(st.sampled_from(sorted(OPTIMISATIONS))),
)
def test_engine_equals_reference(text: str, events: list[Event], off: set[str]) -> None:
    parsed = parse_file(text)
    program, errors = validate(parsed)
    assume(parsed.ok and not errors)
    expected = evaluate(program, events)
    engine = Engine(EngineConfig.without(*off))
    engine.subscribe(program)
    got = engine.run(events)
    assert got == expected, (
        sorted(r.to_json() for r in got - expected),
        sorted(r.to_json() for r in expected - got),
    )
