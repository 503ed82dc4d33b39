"""Hypothesis strategies: random CEL programs and event streams (docs/cel.md).

Programs are written as CEL text over two base streams, ``S(a, b)`` and
``T(a, b, c)``, and cover FILTER, SELECT (renaming, attribute introduction),
NEXT, FOLD with aggregates, UNION, DUR, PUBLISH with resubscription by name,
and right operands that need an internal resubscription stream. Values are
small integers, two strings and null, so comparisons of mixed kinds occur;
timestamps are a few seconds apart, so simultaneous and overlapping events
are common. Import as ``from tests.cel.strategies import programs, event_lists``.
"""

from __future__ import annotations

import json

from hypothesis import strategies as st

from xscl.events.envelope import Event, parse_event

__all__ = ["HEADER", "event_lists", "header", "programs"]

HEADER = "DECLARE STREAM S(a, b);\nDECLARE STREAM T(a, b, c);\n"
BASE = {"S": ("a", "b"), "T": ("a", "b", "c")}
VALUES = st.sampled_from([0, 1, 1, 2, 2, 3, "x", None])
CONSTANTS = st.sampled_from(["0", "1", "2", "'x'", "1.5"])
OPS = st.sampled_from(["=", "!=", "<", "<=", ">", ">="])


@st.composite
def _value(draw: st.DrawFn, refs: list[str]) -> str:
    kind = draw(st.integers(0, 5))
    if kind == 0 or not refs:
        return draw(CONSTANTS)
    ref = draw(st.sampled_from(refs))
    if kind == 1:
        return f"{ref} {draw(st.sampled_from(['+', '-', '*', '/']))} {draw(CONSTANTS)}"
    if kind == 2:
        return f"-{ref}"
    return ref


@st.composite
def _often_true(draw: st.DrawFn, refs: list[str]) -> str:
    """A condition for NEXT and FOLD, TRUE a third of the time so that sequences complete."""
    return "TRUE" if draw(st.integers(0, 2)) == 0 else draw(_condition(refs))


@st.composite
def _condition(draw: st.DrawFn, refs: list[str], depth: int = 0) -> str:
    kind = draw(st.integers(0, 9 if depth < 2 else 5))
    if kind <= 3:
        return f"{draw(_value(refs))} {draw(OPS)} {draw(_value(refs))}"
    if kind == 4:
        unit = draw(st.sampled_from(["s", "", "ms"]))
        amount = draw(st.integers(0, 4)) * (1000 if unit == "ms" else 1)
        return f"DUR {draw(OPS)} {amount}{unit}"
    if kind == 5:
        return draw(st.sampled_from(["TRUE", "TRUE", "FALSE"]))
    if kind == 6:
        return f"NOT ({draw(_condition(refs, depth + 1))})"
    if kind == 7 and refs:
        return f"contains(lower({draw(st.sampled_from(refs))}), 'x')"
    op = draw(st.sampled_from(["AND", "OR"]))
    return f"({draw(_condition(refs, depth + 1))} {op} {draw(_condition(refs, depth + 1))})"


def _renamed_next(left: tuple[str, ...], right: tuple[str, ...]) -> tuple[str, ...]:
    if set(left).isdisjoint(right):
        return left + right
    return tuple(f"{a}_1" for a in left) + right


@st.composite
def _unary(draw: st.DrawFn, streams: dict[str, tuple[str, ...]]) -> tuple[str, tuple[str, ...]]:
    """A stream under FILTERs and a SELECT (a simple operand)."""
    name = draw(st.sampled_from(sorted(streams)))
    schema = streams[name]
    text = name
    if draw(st.booleans()):
        text = f"FILTER{{{draw(_condition(list(schema)))}}}({text})"
    return text, schema


@st.composite
def _stream(
    draw: st.DrawFn, streams: dict[str, tuple[str, ...]], depth: int = 0
) -> tuple[str, tuple[str, ...]]:
    """A stream expression and its schema (valid by construction, nearly always)."""
    kind = draw(st.integers(0, 6 if depth < 2 else 1))
    if kind <= 1:
        return draw(_unary(streams))
    left, lschema = draw(_stream(streams, depth + 1))
    if kind == 2:  # NEXT with a simple right operand
        right, rschema = draw(_unary(streams))
        refs = [f"$1.{a}" for a in lschema] + [f"$2.{a}" for a in rschema]
        pred = draw(_often_true(refs))
        return f"({left}) NEXT{{{pred}}} ({right})", _renamed_next(lschema, rschema)
    if kind == 3:  # FOLD over a base stream whose schema the left includes
        candidates = sorted(s for s, schema in streams.items() if set(schema) <= set(lschema))
        if not candidates:
            return left, lschema
        name = draw(st.sampled_from(candidates))
        rschema = streams[name]
        agg = ""
        extra = ()
        if draw(st.booleans()):
            left = f"(SELECT *, 0 AS n FROM ({left}))" if "n" not in lschema else left
            extra = ("n",) if "n" not in lschema else ()
            agg = f", $.n + {draw(st.sampled_from(['1', f'$2.{rschema[0]}']))} AS n"
        lschema = lschema + extra
        iterated = rschema + (("n",) if agg else ())
        refs = (
            [f"$1.{a}" for a in lschema]
            + [f"$2.{a}" for a in rschema]
            + [f"$.{a}" for a in iterated]
        )
        pred, stop = draw(_often_true(refs)), draw(_often_true(refs))
        schema = tuple(f"{a}_1" if a in iterated else a for a in lschema) + iterated
        if len(set(schema)) < len(schema):  # the renaming would collide (CEL-V009)
            return left, lschema
        return f"({left}) FOLD{{{pred}, {stop}{agg}}} {name}", schema
    if kind == 4:  # UNION with the same names
        other, oschema = draw(_stream(streams, depth + 1))
        if set(oschema) != set(lschema):
            picks = ", ".join(f"{oschema[i % len(oschema)]} AS {a}" for i, a in enumerate(lschema))
            other = f"(SELECT {picks} FROM ({other}))"
        return f"({left}) UNION ({other})", lschema
    if kind == 5:  # a right operand that needs resubscription
        inner, ischema = draw(_stream(streams, depth + 1))
        names = [f"r{i}" for i in range(len(ischema))]
        picks = ", ".join(f"{a} AS {n}" for a, n in zip(ischema, names, strict=True))
        refs = [f"$1.{a}" for a in lschema] + [f"$2.{n}" for n in names]
        pred = draw(_often_true(refs))
        right = f"(SELECT {picks} FROM ({inner}))"
        return f"({left}) NEXT{{{pred}}} {right}", _renamed_next(lschema, tuple(names))
    # a SELECT that renames and computes
    picks = [f"{a} AS s{i}" for i, a in enumerate(lschema)]
    picks.append(f"{draw(_value(list(lschema)))} AS v")
    names = (*(f"s{i}" for i in range(len(lschema))), "v")
    return f"(SELECT {', '.join(picks)} FROM ({left}))", names


def header(base: dict[str, tuple[str, ...]]) -> str:
    """The ``DECLARE STREAM`` lines of ``base``'s streams."""
    return "".join(f"DECLARE STREAM {s}({', '.join(schema)});\n" for s, schema in base.items())


@st.composite
def programs(
    draw: st.DrawFn, base: dict[str, tuple[str, ...]] | None = None, most: int = 3
) -> str:
    """A CEL file of one to ``most`` queries over ``base`` (default: S and T); a later
    one may read what an earlier PUBLISHes."""
    streams = dict(base or BASE)
    queries = []
    for number in range(draw(st.integers(1, most))):
        text, schema = draw(_stream(streams))
        publish = ""
        if draw(st.booleans()) and len(schema) <= 4:
            name = f"P{number}"
            publish = f" PUBLISH {name}"
            streams[name] = schema
        queries.append(f"q{number}: FROM {text}{publish}")
    return (HEADER if base is None else header(base)) + ";\n".join(queries)


@st.composite
def _event(draw: st.DrawFn) -> Event:
    stream = draw(st.sampled_from(["S", "T"]))
    end = draw(st.integers(0, 8))
    start = end - draw(st.sampled_from([0, 0, 0, 1, 2]))
    attrs = {name: draw(VALUES) for name in BASE[stream]}
    return parse_event(json.dumps({"stream": stream, "start": start, "end": end, "attrs": attrs}))


def event_lists(min_size: int = 5, max_size: int = 16) -> st.SearchStrategy[list[Event]]:
    """A short stream of S and T events over a few seconds (ties and overlaps included)."""
    return st.lists(_event(), min_size=min_size, max_size=max_size)
