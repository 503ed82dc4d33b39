"""The merged automaton of an engine's queries, as text (``xscl cel explain``).

One block per state, in the thesis's notation (4.3): ``e.a`` is attribute a of
the event read by an edge, ``S3.a`` attribute a of the instance stored at state
S3, ``DUR`` the composite's duration (``DUR(e)`` the event's own). A state
lists its filter predicate (an event that satisfies it *affects* an instance),
its rebind edge (FOLD) and its forward edges with their predicates and the
values they store; an end state lists what it outputs.

>>> from xscl.lang.cel.parser import parse_file
>>> from xscl.lang.cel.validation import validate
>>> from xscl.events.engine import Engine
>>> engine = Engine()
>>> _ = engine.subscribe(validate(parse_file('''DECLARE STREAM S(k, v);
...     a: FROM FILTER{v > 1}(S) NEXT{$2.k = $1.k} S;
...     b: FROM FILTER{v > 1}(S) NEXT{$2.k = $1.k} S PUBLISH P'''))[0])
>>> print("\\n".join(explain(engine)))
2 states, 2 edges
stream S
  -> S1 when e.v > 1 store (k := e.k, v := e.v)
S1  NEXT state reading S, 2 queries; instances (k, v)
  filter e.k = S1.k
  -> S2 store (k_1 := S1.k, v_1 := S1.v, k := e.k, v := e.v)
S2  end state, 2 queries: a; b PUBLISH P
"""

from __future__ import annotations

from xscl.events.automaton import Edge, State
from xscl.events.engine import Engine
from xscl.events.ir import IR, And, Bin, Cmp, DurCmp, E, Fn, I, Lit, Neg, Not, Or

__all__ = ["describe", "explain"]


def describe(node: IR, state: str, instance: tuple[str, ...], event: tuple[str, ...]) -> str:
    """``node`` with slots written as ``e.name`` and ``STATE.name``."""

    def text(n: IR) -> str:
        if isinstance(n, I):
            return f"{state}.{instance[n.index]}"
        if isinstance(n, E):
            return f"e.{event[n.index]}"
        if isinstance(n, Lit):
            value = n.value
            if isinstance(value, bool):
                return "TRUE" if value else "FALSE"
            return repr(value) if isinstance(value, str) else str(value)
        if isinstance(n, Neg):
            return f"-{text(n.operand)}"
        if isinstance(n, Bin):
            return f"({text(n.left)} {n.op} {text(n.right)})"
        if isinstance(n, Cmp):
            return f"{text(n.left)} {n.op} {text(n.right)}"
        if isinstance(n, DurCmp):
            return f"{'DUR(e)' if n.of_event else 'DUR'} {n.op} {n.micros}us"
        if isinstance(n, And | Or):
            joiner = " AND " if isinstance(n, And) else " OR "
            return "(" + joiner.join(text(i) for i in n.items) + ")"
        if isinstance(n, Not):
            return f"NOT {text(n.operand)}"
        assert isinstance(n, Fn)
        return f"{n.name}({', '.join(text(a) for a in n.args)})"

    return text(node)


def _edge(engine: Engine, edge: Edge, label: str) -> str:
    source = edge.source
    name = f"S{source.ident}"
    event = engine.schemas[source.stream] if source.stream else ()
    parts = [label]
    if edge.label.pred:
        pred = " AND ".join(describe(c, name, source.names, event) for c in edge.label.pred)
        parts.append(f"when {pred}")
    stored = ", ".join(
        f"{target} := {describe(value, name, source.names, event)}"
        for target, value in zip(edge.target.names, edge.label.mapping, strict=True)
    )
    parts.append(f"store ({stored})")
    return "  " + " ".join(parts)


def _state(engine: Engine, state: State) -> list[str]:
    holders = engine.network.holders(state)
    queries = f"{holders} quer{'y' if holders == 1 else 'ies'}"
    if state.stream is None:
        outputs = "; ".join(
            f"{o.query}{f' PUBLISH {o.stream}' if o.stream else ''}"
            if o.query
            else f"internal stream {o.stream}"
            for o in state.outputs
        )
        return [f"S{state.ident}  end state, {queries}: {outputs}"]
    name = f"S{state.ident}"
    kind = "NEXT state" if state.rebind is None else "FOLD state"
    schema = ", ".join(state.names)
    lines = [f"{name}  {kind} reading {state.stream}, {queries}; instances ({schema})"]
    event = engine.schemas[state.stream]
    if state.filter:
        pred = " AND ".join(describe(c, name, state.names, event) for c in state.filter)
        lines.append(f"  filter {pred}")
    if state.rebind is not None:
        lines.append(_edge(engine, state.rebind, "rebind"))
    lines.extend(_edge(engine, edge, f"-> S{edge.target.ident}") for edge in state.forwards)
    return lines


def explain(engine: Engine) -> list[str]:
    """The lines describing every state and edge of ``engine``'s network."""
    network = engine.network
    states = network.states()
    lines = [f"{len(states)} states, {network.edge_count()} edges"]
    for stream, start in sorted(network.start_states.items()):
        if start.forwards:
            lines.append(f"stream {stream}")
            lines.extend(_edge(engine, edge, f"-> S{edge.target.ident}") for edge in start.forwards)
    for state in states:
        lines.extend(_state(engine, state))
    return lines
