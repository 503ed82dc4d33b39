"""Registration with the shape memo (``xscl.events.shape_memo``) builds exactly the
automata of compiling every query without it, and so gives exactly its results (and
the reference evaluator's): on random programs, and on template workloads whose
queries share shapes and prefixes and differ in literals (values and types), with
queries unsubscribed and subscribed again between events."""

from __future__ import annotations

import random
from typing import Any

from hypothesis import HealthCheck, assume, given, settings

from tests.cel.strategies import event_lists, programs
from xscl.events.engine import Engine, EngineConfig
from xscl.events.envelope import Event
from xscl.events.reference import evaluate
from xscl.events.results import Result
from xscl.events.shape_memo import ShapeMemo
from xscl.lang.cel.parser import parse_file
from xscl.lang.cel.validation import Program, validate

HEADER = "DECLARE STREAM S(a, b, c, x);\n"


def structure(engine: Engine) -> list[Any]:
    """Every state and edge of the engine's network, with ids, labels and outputs."""
    states = [*engine.network.start_states.values(), *engine.network.states()]
    return [
        (
            s.ident,
            s.stream,
            s.names,
            s.filter,
            None if s.rebind is None else (s.rebind.label, s.rebind.since),
            [(e.ident, e.target.ident, e.label, e.since) for e in s.forwards],
            [(o.query, o.stream, o.since, o.report, o.names, o.order) for o in s.outputs],
        )
        for s in states
    ]


def _program(queries: dict[str, str]) -> Program:
    text = HEADER + ";\n".join(f"{qid}: {body}" for qid, body in queries.items())
    parsed = parse_file(text)
    program, errors = validate(parsed, text=text)
    assert parsed.ok and not errors, [str(e) for e in (*parsed.errors, *errors)]
    return program


class Templates:
    """Queries of a few templates: steps drawn from small pools (shared prefixes, equal
    shapes) with literals of varied values and types (``1`` and ``1.0``, strings)."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)

    def literal(self) -> str:
        return self.rng.choice(["0", "1", "2", "1.0", "2.0", "-1", "0.5"])

    def comparison(self) -> str:
        rng = self.rng
        return rng.choice(
            [
                f"a = {self.literal()}",
                f"b != {self.literal()}",
                f"x > {self.literal()}",
                f"x <= {self.literal()}",
                f"c = '{rng.choice('pqr')}'",
                f"b < {self.literal()}",
                "DUR <= 3",
                "TRUE",
            ]
        )

    def step(self) -> str:
        return " AND ".join(self.comparison() for _ in range(self.rng.randint(1, 3)))

    def query(self, shared: list[str]) -> str:
        rng = self.rng
        first = rng.choice(shared)  # many queries start alike: merged prefixes
        t2, t3 = self.step(), self.step()
        v = self.literal()
        return rng.choice(
            [
                f"SELECT * FROM FILTER{{{t3}}}(FILTER{{{t2}}}(FILTER{{{first}}}(S) NEXT S) NEXT S)",
                f"SELECT * FROM FILTER{{{t2}}}(FILTER{{{first}}}(S) NEXT{{$2.a = $1.a}} S)",
                f"SELECT a, x + {v} AS y FROM FILTER{{{first} AND {t2}}}(S)",
                # the same names, other values: a comparison's IR depends on its context
                f"SELECT * FROM FILTER{{{t2}}}(SELECT x AS a, a AS x, b, c FROM "
                f"FILTER{{{first}}}(S))",
                f"SELECT * FROM FILTER{{{first}}}(S) FOLD{{DUR <= 4 AND $2.b = {v}, "
                f"$2.x > $.x}} FILTER{{{t2}}}(S)",
                f"SELECT * FROM FILTER{{{first}}}(S) NEXT{{$2.c = $1.c AND $2.x > {v}}} "
                f"(FILTER{{{t2}}}(S) UNION FILTER{{{t3}}}(S))",
            ]
        )

    def queries(self, first: int, count: int) -> dict[str, str]:
        shared = [self.step() for _ in range(3)]
        return {f"q{n}": self.query(shared) for n in range(first, first + count)}

    def events(self, count: int) -> list[Event]:
        rng = self.rng
        return [
            Event(
                "S",
                t,
                t,
                {
                    "a": rng.choice([0, 1, 2, 1.0]),
                    "b": rng.randrange(3),
                    "c": rng.choice("pqr"),
                    "x": rng.choice([-1, 0.5, 1, 1.0, 2.5]),
                },
            )
            for t in range(1, count + 1)
        ]


def _epochs(engine: Engine, events: list[Event]) -> list[set[Result]]:
    return [engine.process_epoch(e.end, [e]) for e in events]


def _check_scenario(seed: int, memo: ShapeMemo | None = None) -> Engine:
    """Subscribe, process, unsubscribe and subscribe again, in an engine with the memo
    and one without; every epoch's results and the networks must be equal."""
    draw = Templates(seed)
    memoised, plain = Engine(), Engine(EngineConfig(shape_memo=False))
    assert plain.memo is None
    if memo is not None:
        memoised.memo = memo
    engines = (memoised, plain)
    first = draw.queries(0, 60)
    events = draw.events(40)
    for engine in engines:
        engine.subscribe(_program(first))
    assert structure(memoised) == structure(plain)
    got, want = _epochs(memoised, events[:15]), _epochs(plain, events[:15])
    assert got == want
    dropped = draw.rng.sample(sorted(first), 25)
    for engine in engines:
        for qid in dropped:
            engine.unsubscribe(qid)
    assert structure(memoised) == structure(plain)
    # the dropped queries again (same ids, same text) and new ones of the same shapes
    again = {qid: first[qid] for qid in dropped[:15]} | draw.queries(60, 30)
    for engine in engines:
        engine.subscribe(_program(again))
    assert structure(memoised) == structure(plain)
    got, want = _epochs(memoised, events[15:]), _epochs(plain, events[15:])
    assert got == want
    assert sum(len(r) for r in got) > 0  # the workload produces results
    for engine in engines:
        engine.close()
    return memoised


def test_memo_builds_the_same_network_and_results_through_unsubscribe_and_resubscribe() -> None:
    for seed in range(4):
        memoised = _check_scenario(seed)
        assert memoised.memo is not None and memoised.memo.hits > memoised.memo.misses


def test_a_memo_that_starts_afresh_every_few_entries_changes_nothing() -> None:
    memo = ShapeMemo(limit=3)
    _check_scenario(11, memo)
    assert len(memo) <= 3 and memo.hits > 0


def test_memoised_subscriptions_equal_the_reference() -> None:
    """All changes before the first event: the reference evaluates the final set."""
    draw = Templates(5)
    current = draw.queries(0, 50)
    engine = Engine()
    engine.subscribe(_program(current))
    for qid in sorted(current)[::3]:
        engine.unsubscribe(qid)
        del current[qid]
    more = draw.queries(50, 20)
    engine.subscribe(_program(more))
    current |= more
    events = draw.events(30)
    expected = evaluate(_program(current), events)
    assert engine.run(events) == expected
    assert expected


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=programs(), events=event_lists())
def test_memo_on_random_programs_equals_compiling_without_it(
    text: str, events: list[Event]
) -> None:
    parsed = parse_file(text)
    program, errors = validate(parsed)
    assume(parsed.ok and not errors)
    memoised, plain = Engine(), Engine(EngineConfig(shape_memo=False))
    memoised.subscribe(program)
    plain.subscribe(program)
    assert structure(memoised) == structure(plain)
    assert memoised.run(events) == plain.run(events) == evaluate(program, events)
