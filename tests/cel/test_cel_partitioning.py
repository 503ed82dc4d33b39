"""Partitioned evaluation (docs/cel.md 10.3) equals the reference evaluator.

Events are routed with ``partitioning.route``; each group runs its class's
queries over its own events; the union of all groups' results must equal the
reference over the whole input, for random programs (mostly the global
partition) and for keyed ones (NEXT/FOLD steps with ``$2.a = $1.a`` or
``$2.a = $.a``, chained by PUBLISH).
"""

from __future__ import annotations

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from tests.cel.strategies import HEADER, event_lists, programs
from xscl.events.engine import Engine
from xscl.events.envelope import Event
from xscl.events.partitioning import class_program, partition_classes, route
from xscl.events.reference import evaluate
from xscl.events.results import Result
from xscl.lang.cel.parser import parse_file
from xscl.lang.cel.validation import Program, validate

CONDITIONS = st.sampled_from(["TRUE", "$2.b > 0", "$1.b != $2.b", "$2.b = 'x'", "DUR < 3s"])
KEYED = [
    "FROM S NEXT{$1.a = $2.a AND {c}} T",
    "FROM (SELECT a, b FROM S) FOLD{$2.a = $.a AND {c}, {d}} S",
    "FROM S FOLD{$2.a = $1.a, {d}, $.b + 1 AS b} S",
    "FROM (SELECT a AS k, b FROM T) NEXT{$2.a = $1.k AND {c}} S",
    "FROM S NEXT{$1.a = $2.a} S NEXT{$2.a = $1.a AND {c}} T",
]


@st.composite
def keyed_programs(draw: st.DrawFn) -> str:
    """One to three keyed queries; the second may read the first's PUBLISHed stream."""
    queries = []
    for number in range(draw(st.integers(1, 3))):
        template = draw(st.sampled_from(KEYED))
        text = template.replace("{c}", draw(CONDITIONS)).replace("{d}", draw(CONDITIONS))
        if number == 0 and draw(st.booleans()):
            text = "SELECT a, b " + text + " PUBLISH P"
        elif number > 0 and "PUBLISH P" in queries[0] and draw(st.booleans()):
            text = f"FROM P NEXT{{$2.a = $1.a AND {draw(CONDITIONS)}}} S"
        queries.append(f"k{number}: {text}")
    return HEADER + ";\n".join(queries)


def partitioned(program: Program, events: list[Event], buckets: int) -> set[Result]:
    classes = partition_classes(program)
    groups: dict[tuple[int, int], list[Event]] = {}
    for event in events:
        for group in route(classes, event, buckets):
            groups.setdefault(group, []).append(event)
    results: set[Result] = set()
    for (index, _bucket), routed in groups.items():
        engine = Engine()
        engine.subscribe(class_program(program, classes[index]))
        results |= engine.run(routed)
    return results


def check(text: str, events: list[Event], buckets: int) -> bool:
    parsed = parse_file(text)
    program, errors = validate(parsed)
    assume(parsed.ok and not errors)
    assert partitioned(program, events, buckets) == evaluate(program, events)
    return any(c.keys is not None for c in partition_classes(program))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=programs(), events=event_lists(), buckets=st.integers(1, 4))
def test_random_programs_partitioned(text: str, events: list[Event], buckets: int) -> None:
    check(text, events, buckets)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=keyed_programs(), events=event_lists(), buckets=st.integers(2, 4))
def test_keyed_programs_partitioned(text: str, events: list[Event], buckets: int) -> None:
    assert check(text, events, buckets)


def test_unkeyed_step_sends_its_class_to_the_global_partition() -> None:
    program, _ = validate(parse_file(HEADER + "x: FROM S NEXT{$2.b > $1.b} T PUBLISH X; "
                                     "y: FROM X NEXT{$2.a = $1.a} S"))  # fmt: skip
    (only,) = partition_classes(program)
    assert only.queries == ("x", "y") and only.keys is None
