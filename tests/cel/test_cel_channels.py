"""Channels into CEL (xscl.events.channels, Hong 2009 §5.3, §5.4.4): a tuple that belongs
to several sharable streams, processed once with its membership, gives every query
exactly the results of processing each stream's copy, and the reference's.

Random programs over member streams ``S1..Sk`` (schema ``a, b``) and a plain stream
``T`` (tests/cel/strategies.py), random memberships (every member, a subset, a single
stream), capacity 1, 3 and 10; seeded Workload-3-like sets (NEXT and FOLD with windows,
predicates, UNIONs of members, queries over subsets); subscribing and unsubscribing
while running; state transfer; the channel declared after queries; ``CEL-S006``.
"""

from __future__ import annotations

import random

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from tests.cel.strategies import VALUES, header, programs
from xscl.errors import SubscriptionError
from xscl.events.channels import ChannelEvent
from xscl.events.engine import OPTIMISATIONS, Engine, EngineConfig
from xscl.events.envelope import Event
from xscl.events.reference import evaluate
from xscl.events.results import Result
from xscl.lang.cel.parser import parse_file
from xscl.lang.cel.validation import Program, validate

Input = list[Event | ChannelEvent]


def members(capacity: int) -> list[str]:
    return [f"S{n}" for n in range(1, capacity + 1)]


def base(capacity: int) -> dict[str, tuple[str, ...]]:
    return {**{s: ("a", "b") for s in members(capacity)}, "T": ("a", "b", "c")}


def program(text: str) -> Program:
    parsed = parse_file(text)
    checked, errors = validate(parsed)
    assert parsed.ok and not errors, [str(e) for e in (*parsed.errors, *errors)]
    return checked


def decoded(events: Input) -> list[Event]:
    """The per-stream copies of an input."""
    return [c for e in events for c in (e.decode() if isinstance(e, ChannelEvent) else [e])]


def channel_engine(checked: Program, capacity: int, config: EngineConfig | None = None) -> Engine:
    engine = Engine(config)
    engine.declare_channel("C", ("a", "b"), members(capacity))
    engine.subscribe(checked)
    return engine


def plain_engine(checked: Program, config: EngineConfig | None = None) -> Engine:
    engine = Engine(config)
    engine.subscribe(checked)
    return engine


def diff(got: set[Result], want: set[Result]) -> tuple[list[str], list[str]]:
    return sorted(r.to_json() for r in got - want), sorted(r.to_json() for r in want - got)


def check_all_agree(checked: Program, events: Input, capacity: int, off: set[str]) -> set[Result]:
    """Channel tuples == their decoded copies (with and without the channel) == reference."""
    config = EngineConfig.without(*off)
    expected = evaluate(checked, decoded(events))
    by_channel = channel_engine(checked, capacity, config).run(events)
    assert by_channel == expected, diff(by_channel, expected)
    copies_into_channel = channel_engine(checked, capacity, config).run(decoded(events))
    assert copies_into_channel == expected, diff(copies_into_channel, expected)
    per_stream = plain_engine(checked, config).run(decoded(events))
    assert per_stream == expected, diff(per_stream, expected)
    return expected


# ---------------------------------------------------------------- random programs


@st.composite
def channel_inputs(draw: st.DrawFn, capacity: int) -> Input:
    """A few seconds of channel tuples (random memberships), plain member events and T."""
    names = members(capacity)
    out: Input = []
    for _ in range(draw(st.integers(4, 14))):
        end = draw(st.integers(0, 8))
        start = end - draw(st.sampled_from([0, 0, 0, 1, 2]))
        kind = draw(st.integers(0, 3))
        if kind == 0:
            attrs = {n: draw(VALUES) for n in ("a", "b", "c")}
            out.append(Event("T", start, end, attrs))
            continue
        attrs = {n: draw(VALUES) for n in ("a", "b")}
        if kind == 1:
            out.append(Event(draw(st.sampled_from(names)), start, end, attrs))
        else:
            streams = draw(st.sets(st.sampled_from(names), min_size=1))
            out.append(ChannelEvent(tuple(sorted(streams)), start, end, attrs))
    return out


@st.composite
def cases(draw: st.DrawFn) -> tuple[int, str, Input]:
    capacity = draw(st.sampled_from([1, 3, 10]))
    return capacity, draw(programs(base(capacity), most=4)), draw(channel_inputs(capacity))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=cases(), off=st.sets(st.sampled_from(sorted(OPTIMISATIONS))))
def test_channel_tuples_give_the_results_of_their_copies(
    case: tuple[int, str, Input], off: set[str]
) -> None:
    capacity, text, events = case
    parsed = parse_file(text)
    checked, errors = validate(parsed)
    assume(parsed.ok and not errors)
    check_all_agree(checked, events, capacity, off)


# ---------------------------------------------------------------- Workload 3, seeded


def workload_3(rng: random.Random, capacity: int, count: int, prefix: str = "q") -> str:
    """A CEL file of ``workload_3_queries``."""
    return header(base(capacity)) + ";\n".join(workload_3_queries(rng, capacity, count, prefix))


def workload_3_queries(rng: random.Random, capacity: int, count: int, prefix: str) -> list[str]:
    """Hong's Workload 3 (``S_i ;θ1∧θ2 T``) with FOLD, FILTER and UNION variants."""
    names = members(capacity)
    queries = []
    for n in range(count):
        s = rng.choice(names)
        w = rng.choice([1, 2, 3, 5, 8])
        kind = rng.randrange(6)
        if kind <= 1:
            q = f"{s} NEXT{{$2.a = $1.a AND DUR <= {w}}} T"
        elif kind == 2:
            q = f"FILTER{{b >= {rng.randrange(3)}}}({s}) NEXT{{DUR <= {w} AND $2.c = 1}} T"
        elif kind == 3:
            q = f"{s} FOLD{{$2.a = $1.a AND DUR <= {w}, $2.b > $.b}} (SELECT a, b FROM T)"
        elif kind == 4:  # two members of the channel: read as plain streams
            other = rng.choice(names)
            q = f"({s} UNION {other}) NEXT{{$2.a = $1.a AND DUR <= {w}}} T"
        else:  # a member as the second input
            q = f"T NEXT{{$2.a = $1.a AND DUR <= {w}}} {s}"
        queries.append(f"{prefix}{n}: FROM {q}")
    return queries


def rounds(rng: random.Random, capacity: int, count: int, *, subsets: bool) -> Input:
    """Thesis §5.5.2's rounds: a C tuple (every member, or a random subset), then a T."""
    names = members(capacity)
    out: Input = []
    for t in range(count):
        attrs = {"a": rng.randrange(3), "b": rng.randrange(3)}
        streams = tuple(names)
        if subsets:
            streams = tuple(s for s in names if rng.random() < 0.5) or (rng.choice(names),)
        out.append(ChannelEvent(streams, 2 * t, 2 * t, attrs))
        out.append(
            Event("T", 2 * t + 1, 2 * t + 1, {"a": rng.randrange(3), "b": rng.randrange(3), "c": 1})
        )
    return out


@pytest.mark.parametrize("capacity", [1, 10])
@pytest.mark.parametrize("subsets", [False, True])
@pytest.mark.parametrize("seed", range(3))
def test_workload_3_with_and_without_channels(capacity: int, subsets: bool, seed: int) -> None:
    rng = random.Random(seed)
    checked = program(workload_3(rng, capacity, 40))
    events = rounds(rng, capacity, 30, subsets=subsets)
    expected = check_all_agree(checked, events, capacity, set())
    assert expected, "the workload must produce results for the comparison to mean something"


def test_a_channel_shares_states_and_instances_across_its_streams() -> None:
    """Ten copies of one query over ten members: one automaton, one instance per tuple
    (ten of each without the channel)."""
    text = header(base(10)) + ";\n".join(
        f"q{n}: FROM S{n} NEXT{{$2.a = $1.a AND DUR <= 5}} T" for n in range(1, 11)
    )
    checked = program(text)
    events = rounds(random.Random(1), 10, 3, subsets=False)[:-1]  # ends on a C tuple
    shared, separate = channel_engine(checked, 10), plain_engine(checked)
    assert shared.run(events) == separate.run(decoded(events)) == evaluate(checked, decoded(events))
    reading = [[s for s in e.network.states() if s.stream] for e in (shared, separate)]
    assert [len(states) for states in reading] == [1, 10]
    assert shared.instance_count() > 0
    assert separate.instance_count() == 10 * shared.instance_count()


def test_outputs_follow_the_membership() -> None:
    text = header(base(3)) + (
        "q1: FROM S1 NEXT T;\nq2: FROM S2 NEXT T;\nq3: FROM S3 NEXT T PUBLISH P;\nr: FROM P"
    )
    checked = program(text)
    engine = channel_engine(checked, 3)
    events: Input = [
        ChannelEvent(("S1", "S3"), 1, 1, {"a": 1, "b": 2}),
        Event("T", 2, 2, {"a": 0, "b": 0, "c": 0}),
    ]
    got = engine.run(events)
    assert sorted({r.query for r in got}) == ["q1", "q3", "r"]
    assert got == evaluate(checked, decoded(events))


# ---------------------------------------------------------------- running engines


def test_subscribe_and_unsubscribe_while_running_agree_with_copies() -> None:
    """Edges' members follow their holders: a query leaving or joining changes nothing
    for the others, and a query joining sees only later events."""
    rng = random.Random(5)
    capacity = 4
    programs_ = [program(workload_3(random.Random(n), capacity, 6, f"b{n}q")) for n in range(3)]
    events = rounds(rng, capacity, 40, subsets=True)
    shared = Engine()
    shared.declare_channel("C", ("a", "b"), members(capacity))
    separate = Engine()
    got: set[Result] = set()
    want: set[Result] = set()
    for t, event in enumerate(events):
        if t == 10:
            for engine in (shared, separate):
                engine.subscribe(programs_[0])
                engine.subscribe(programs_[1])
        if t == 30:
            for engine in (shared, separate):
                for qid in [q.qid for q in programs_[0].queries[::2]]:
                    engine.unsubscribe(qid)
                engine.subscribe(programs_[2])
        if t == 50:
            for engine in (shared, separate):
                for qid in [q.qid for q in programs_[1].queries]:
                    engine.unsubscribe(qid)
        got |= shared.process_epoch(event.end, [event])
        want |= separate.process_epoch(event.end, decoded([event]))
    assert got == want, diff(got, want)
    assert got


def test_state_transfer_keeps_memberships() -> None:
    rng = random.Random(11)
    checked = program(workload_3(rng, 10, 30))
    events = rounds(rng, 10, 30, subsets=True)
    whole = channel_engine(checked, 10).run(events)
    first = channel_engine(checked, 10)
    got = first.run(events[:25])
    second = channel_engine(checked, 10)
    second.import_state(first.export_state())
    got |= second.run(events[25:])
    assert got == whole == evaluate(checked, decoded(events))


def test_a_channel_declared_after_its_readers_decodes_for_them() -> None:
    rng = random.Random(3)
    early = workload_3_queries(rng, 3, 10, "early")
    late = workload_3_queries(rng, 3, 10, "late")
    engine = Engine()
    engine.subscribe(program(header(base(3)) + ";\n".join(early)))
    engine.declare_channel("C", ("a", "b"), members(3))
    engine.subscribe(program(header(base(3)) + ";\n".join(late)))
    events = rounds(rng, 3, 25, subsets=True)
    got = engine.run(events)
    assert got == evaluate(program(header(base(3)) + ";\n".join(early + late)), decoded(events))
    assert {r.query[:4] for r in got} == {"earl", "late"}


# ---------------------------------------------------------------- refusals


@pytest.mark.parametrize(
    ("name", "schema", "streams", "why"),
    [
        ("C", ("a", "b"), ["S1"], "already declared"),
        ("D", ("a", "b"), ["S2"], "already in a channel"),
        ("D", ("a", "b"), ["P"], "not a base stream"),
        ("D", ("b", "a"), ["U"], "has attributes"),
        ("D", ("a", "b"), [], "distinct streams"),
        ("D", ("a", "b"), ["V", "V"], "distinct streams"),
    ],
)
def test_channels_the_engine_cannot_declare(
    name: str, schema: tuple[str, ...], streams: list[str], why: str
) -> None:
    engine = Engine()
    engine.subscribe(
        program("DECLARE STREAM U(a, b);\nDECLARE STREAM X(a, b);\np: FROM X PUBLISH P")
    )
    engine.declare_channel("C", ("a", "b"), ["S1", "S2"])
    with pytest.raises(SubscriptionError, match=why) as caught:
        engine.declare_channel(name, schema, streams)
    assert caught.value.code == "CEL-S006"


def test_an_edge_keeps_the_members_of_the_queries_holding_it() -> None:
    """A shared edge is traversed only for the streams of the queries that still hold it."""
    text = header(base(3)) + ";\n".join(
        f"q{n}: FROM S{n} NEXT{{$2.a = $1.a}} T" for n in range(1, 4)
    )
    engine = channel_engine(program(text), 3)
    (edge,) = engine.network.start_states["@C"].forwards
    bits = {s: engine.channels.bit(s) for s in members(3)}
    assert edge.members == bits["S1"] | bits["S2"] | bits["S3"]
    engine.unsubscribe("q2")
    assert edge.members == bits["S1"] | bits["S3"]
    got = engine.run([ChannelEvent(("S2",), 1, 1, {"a": 1}), Event("T", 2, 2, {"a": 1})])
    assert got == set()
    assert engine.instance_count() == 0  # the S2-only tuple did not traverse the edge


@pytest.mark.parametrize("declared", [False, True])
def test_result_channels_decode_to_the_results(declared: bool) -> None:
    """``process_epoch_channels`` (one tuple per end state, match and schema, thesis
    Example 24's channel D) decodes to exactly ``process_epoch``'s results."""
    rng = random.Random(21)
    checked = program(workload_3(rng, 10, 40))
    events = rounds(rng, 10, 30, subsets=True)
    per_query = channel_engine(checked, 10) if declared else plain_engine(checked)
    shared = channel_engine(checked, 10) if declared else plain_engine(checked)
    got: set[Result] = set()
    want: set[Result] = set()
    for event in events:
        want |= per_query.process_epoch(event.end, [event])
        for tuple_ in shared.process_epoch_channels(event.end, [event]):
            got.update(tuple_.decode())
    assert got == want == evaluate(checked, decoded(events))
    assert want


def test_next_windows_share_one_state() -> None:
    """NEXT's DUR ceilings are on its forward edges: queries that differ only in their
    window share the state and its instances, and keep their own results."""
    text = header(base(1)) + ";\n".join(
        f"w{w}: FROM S1 NEXT{{$2.a = $1.a AND DUR <= {w}}} T" for w in (1, 2, 3, 5, 8)
    )
    checked = program(text)
    engine = plain_engine(checked)
    assert len([s for s in engine.network.states() if s.stream]) == 1
    events = rounds(random.Random(2), 1, 40, subsets=False)
    got = engine.run(events)
    assert got == evaluate(checked, decoded(events))
    assert len({r.query for r in got}) > 1
