"""CEL on Spark: ``xscl cel run --engine spark`` equals the reference (docs/cel.md 10).

One availableNow run per case on the shared session; the cases are the
examples and a few generated keyed and unkeyed workloads (several groups,
resubscription, FOLD aggregates).
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from xscl.events.envelope import Event, read_events
from xscl.events.reference import evaluate
from xscl.lang.cel.parser import parse_file
from xscl.lang.cel.validation import validate
from xscl.spark_plugin.cel.batch import evaluate_on_spark

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "cel"

GENERATED = """DECLARE STREAM S(a, b);
DECLARE STREAM T(a, b, c);
k0: SELECT a, b FROM S NEXT{$1.a = $2.a AND $2.b > $1.b} S PUBLISH P;
k1: FROM P NEXT{$2.a = $1.a} T;
k2: FROM (SELECT a, b, 0 AS n FROM S) FOLD{$2.a = $.a, $2.b >= $.b, $.n + 1 AS n} S;
g0: FROM S NEXT{$2.b > $1.b} T;
f0: FROM FILTER{b = 2}(T)
"""


def _generated_events(seed: int) -> list[Event]:
    rng = random.Random(seed)
    events = []
    for _ in range(60):
        stream = rng.choice(["S", "T"])
        attrs = {"a": rng.choice(["x", "y", "z", 1]), "b": rng.randint(0, 3), "c": None}
        if stream == "S":
            del attrs["c"]
        end = rng.randint(0, 20) * 1_000_000
        events.append(Event(stream, end, end, attrs))
    return events


def _read(path: Path) -> list[Event]:
    with open(path, encoding="utf-8") as handle:
        return [e for _, e in read_events(handle) if isinstance(e, Event)]


def _check(text: str, events: list[Event]) -> None:
    program, errors = validate(parse_file(text))
    assert not errors
    expected = evaluate(program, events)
    assert evaluate_on_spark(text, events) == expected


@pytest.mark.parametrize("name", ["stocks"])
def test_examples_on_spark_equal_the_reference(spark: object, name: str) -> None:
    _check(
        (EXAMPLES / f"{name}.cel").read_text(encoding="utf-8"), _read(EXAMPLES / f"{name}.jsonl")
    )


def test_generated_workload_on_spark_equals_the_reference(spark: object) -> None:
    events = _generated_events(7)
    program, _ = validate(parse_file(GENERATED))
    assert len(evaluate(program, events)) > 10  # the workload finds something
    _check(GENERATED, events)
