"""Semantic checks of parsed XSCL queries (spec/XSCL.md sections 3.2, 3.4 and 5).

``validate`` checks one query, ``validate_all`` a set of queries registered
together (the PUBLISH graph needs them all). Each problem is an
``XsclValidationError`` with a stable code, the query id, the line and column
of the offending construct (from the AST's ``Span``s: a join-variable problem
points at the variable in the join predicate (at its ``JoinOp`` when the AST
has no position for it), a stream at its block, a binding at its step, SELECT
at the query) and what was expected:

========  ===========================================================
V001      a join predicate uses a variable that no block binds
V002      SELECT lists a variable that no block binds
V003      a variable is bound twice in one query
V004      a block reads a stream that is neither in the catalog nor
          PUBLISHed by another valid query (only when a catalog is given)
V005      PUBLISH cycle: the query reads, directly or through other
          queries, a stream it PUBLISHes (every query of the cycle is rejected)
V006      the predicate of operator i uses a variable of a block after i+1
V007      two queries share an id (the later one is rejected)
V008      a name test uses a namespace prefix the file does not declare
          (``xml`` is always bound; a Clark ``{uri}`` prefix, as normal form
          writes it, is accepted)
V009      a function predicate is not an XPath 2.0 expression (parsed with
          ``elementpath.XPath2Parser`` and the query's namespaces, not run)
V010      a function predicate's regular expression is refused: not XPath
          regex syntax (``\\b``, ``(?i)``, look-around), invalid flags, not
          a string literal, or exponential backtracking (``(a+)+``); the
          error points at the offending character of the pattern
          (:mod:`xscl.lang.function_checks`)
========  ===========================================================

Rejecting a query never affects another one, except through what the rejected
query would have provided: a rejected query's PUBLISH stream is not known.
Pass the source ``text`` to get an excerpt with a caret in each error.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence

from xscl.errors import XsclValidationError, excerpt_at, line_column
from xscl.lang.ast import FunctionPredicate, Query, Span
from xscl.lang.function_checks import function_problem
from xscl.lang.gc_pause import GC_PAUSE_QUERIES, gc_paused
from xscl.lang.normal_form.paths import iter_steps, query_bindings
from xscl.lang.normal_form.qualify_namespaces import namespace_map

__all__ = ["publish_cycles", "structural_errors", "validate", "validate_all"]


def _error(
    code: str,
    message: str,
    query: Query,
    span: Span | None,
    expected: Iterable[str],
    text: str | None,
) -> XsclValidationError:
    span = span or query.span
    return XsclValidationError.from_code(
        code,
        message,
        qid=query.qid,
        line=span.line if span else None,
        column=span.column if span else None,
        excerpt=excerpt_at(text, span.offset) if span and text is not None else "",
        expected=tuple(expected),
    )


def _limited(names: Iterable[str], limit: int = 20) -> tuple[str, ...]:
    ordered = sorted(names)
    if len(ordered) > limit:
        return (*ordered[:limit], f"... ({len(ordered) - limit} more)")
    return tuple(ordered)


def structural_errors(
    query: Query, *, text: str | None = None, check_functions: bool = True
) -> list[XsclValidationError]:
    """Errors of ``query`` on its own: V001, V002, V003, V006, V008 and (optionally) V009
    and V010."""
    errors: list[XsclValidationError] = []
    block_of: dict[str, int] = {}
    for index, step in query_bindings(query):
        assert step.var is not None
        if step.var in block_of:
            errors.append(
                _error(
                    "XSCL-V003",
                    f"variable {step.var!r} is bound twice "
                    f"(first in block {block_of[step.var] + 1})",
                    query,
                    step.span,
                    ("a variable name not bound elsewhere in the query",),
                    text,
                )
            )
        else:
            block_of[step.var] = index
    for op_index, op in enumerate(query.ops):
        visible = {v for v, b in block_of.items() if b <= op_index + 1}
        for equality in op.equalities:
            sides = ((equality.left, equality.left_span), (equality.right, equality.right_span))
            for name, name_span in sides:
                where = name_span or op.span
                if name not in block_of:
                    errors.append(
                        _error(
                            "XSCL-V001",
                            f"unbound variable {name!r} in the join predicate",
                            query,
                            where,
                            _limited(visible),
                            text,
                        )
                    )
                elif block_of[name] > op_index + 1:
                    errors.append(
                        _error(
                            "XSCL-V006",
                            f"variable {name!r} of block {block_of[name] + 1} is used by the "
                            f"predicate between blocks {op_index + 1} and {op_index + 2}",
                            query,
                            where,
                            _limited(visible),
                            text,
                        )
                    )
    for name in query.select or ():
        if name not in block_of:
            errors.append(
                _error(
                    "XSCL-V002",
                    f"unbound variable {name!r} in SELECT",
                    query,
                    query.span,
                    _limited(block_of),
                    text,
                )
            )
    errors.extend(_namespace_and_function_errors(query, text, check_functions))
    return errors


def _namespace_and_function_errors(
    query: Query, text: str | None, check_functions: bool
) -> list[XsclValidationError]:
    errors: list[XsclValidationError] = []
    bound = namespace_map(query)
    for block in query.blocks:
        for step in iter_steps(block.steps):
            prefix = step.test.prefix
            if prefix is not None and prefix not in bound and not prefix.startswith("{"):
                errors.append(
                    _error(
                        "XSCL-V008",
                        f"unknown namespace prefix {prefix!r}",
                        query,
                        step.span,
                        tuple(f"{p}:" for p in sorted(bound)),
                        text,
                    )
                )
            if not check_functions:
                continue
            for predicate in step.predicates:
                if isinstance(predicate, FunctionPredicate):
                    problem = function_problem(
                        predicate.expression, tuple(sorted(bound.items()))
                    )
                    if problem is not None:
                        errors.append(_function_error(problem, predicate, query, step.span, text))
    return errors


def _function_error(
    problem: tuple[str, str, int],
    predicate: FunctionPredicate,
    query: Query,
    step_span: Span | None,
    text: str | None,
) -> XsclValidationError:
    code, message, offset = problem
    if code == "XSCL-V009":
        return _error(
            code,
            f"invalid XPath function predicate [{predicate.expression}]: {message}",
            query,
            step_span,
            ("an XPath 2.0 expression",),
            text,
        )
    return _error(
        code,
        f"invalid regular expression in [{predicate.expression}]: {message}",
        query,
        _inside(predicate, offset, text) or step_span,
        ("an XPath regular expression (F&O 7.6.1) and flags among s, m, i, x",),
        text,
    )


def _inside(predicate: FunctionPredicate, offset: int, text: str | None) -> Span | None:
    """The source position of ``offset`` in the predicate's expression (its start when
    the expression is not written verbatim there, e.g. with an XSCL comment inside)."""
    span = predicate.span
    if span is None or text is None:
        return span
    start = span.offset
    if text[start : start + len(predicate.expression)] != predicate.expression:
        return span
    line, column = line_column(text, start + offset)
    return Span(line, column, start + offset)


def validate(
    query: Query,
    *,
    streams: Collection[str] | None = None,
    published: Mapping[str, str] | None = None,
    text: str | None = None,
) -> list[XsclValidationError]:
    """Every error of one query; ``[]`` when it is valid.

    ``streams`` is the catalog of input streams (``None``: accept every stream,
    as the batch command does); ``published`` maps each stream PUBLISHed by an
    already valid query to that query's id (those streams are known too). A
    query that reads its own PUBLISH stream is a cycle (V005); cycles through
    other queries need them all: see ``validate_all``.
    """
    errors = structural_errors(query, text=text)
    publishers = dict(published or {})
    for block in query.blocks:
        if block.stream == RESERVED_STREAM:
            errors.append(_reserved(query, block.span, text))
    if query.publish == RESERVED_STREAM:
        errors.append(_reserved(query, None, text))
    if query.publish is not None and any(b.stream == query.publish for b in query.blocks):
        errors.append(_cycle_error(query, query.publish, [query.qid], text))
    for block in query.blocks:
        if block.stream == query.publish:
            continue
        if streams is not None and block.stream not in streams and block.stream not in publishers:
            errors.append(
                _error(
                    "XSCL-V004",
                    f"unknown stream {block.stream!r}",
                    query,
                    block.span,
                    _limited(set(streams) | set(publishers)),
                    text,
                )
            )
    return errors


#: The stream the Spark job's composite events travel as (``engine.groups.composites``).
RESERVED_STREAM = "xscl.composite"


def _reserved(query: Query, span: Span | None, text: str | None) -> XsclValidationError:
    return _error(
        "XSCL-V012",
        f"the stream name {RESERVED_STREAM!r} is reserved: the job's composite events "
        "travel as it",
        query,
        span,
        ("another stream name",),
        text,
    )


def _cycle_error(
    query: Query, stream: str, cycle: Sequence[str], text: str | None
) -> XsclValidationError:
    span = next((b.span for b in query.blocks if b.stream == stream), None)
    return _error(
        "XSCL-V005",
        f"PUBLISH cycle through stream {stream!r} (queries: {' -> '.join(cycle)})",
        query,
        span,
        ("a stream that does not depend on this query's own PUBLISH output",),
        text,
    )


def publish_cycles(queries: Sequence[Query]) -> dict[str, tuple[str, list[str]]]:
    """Queries on a PUBLISH cycle: qid -> (a stream it reads on the cycle, the cycle's qids).

    Query A feeds query B when B reads a stream A publishes. A query is on a
    cycle when it can reach itself (a self-loop included); found with Tarjan's
    strongly connected components, iteratively.
    """
    by_id = {q.qid: q for q in queries}
    publishers: dict[str, list[str]] = {}
    for q in queries:
        if q.publish is not None:
            publishers.setdefault(q.publish, []).append(q.qid)
    feeds: dict[str, list[str]] = {q.qid: [] for q in queries}  # qid -> its sources
    for q in queries:
        for block in q.blocks:
            for source in publishers.get(block.stream, ()):
                if source not in feeds[q.qid]:
                    feeds[q.qid].append(source)
    result: dict[str, tuple[str, list[str]]] = {}
    for component in strongly_connected(feeds):
        members = set(component)
        if len(component) == 1 and component[0] not in feeds[component[0]]:
            continue
        for qid in component:
            stream = next(
                b.stream
                for b in by_id[qid].blocks
                if any(src in members for src in publishers.get(b.stream, ()))
            )
            result[qid] = (stream, sorted(component))
    return result


def strongly_connected(graph: Mapping[str, Sequence[str]]) -> list[list[str]]:
    """Strongly connected components of ``graph`` (Tarjan, iterative; deterministic order)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    components: list[list[str]] = []
    counter = 0
    for start in graph:
        if start in index:
            continue
        work: list[tuple[str, int]] = [(start, 0)]
        while work:
            node, child = work.pop()
            if child == 0:
                index[node] = low[node] = counter
                counter += 1
                stack.append(node)
                on_stack.add(node)
            successors = graph.get(node, ())
            if child < len(successors):
                work.append((node, child + 1))
                succ = successors[child]
                if succ not in index:
                    work.append((succ, 0))
                elif succ in on_stack:
                    low[node] = min(low[node], index[succ])
                continue
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component: list[str] = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                components.append(sorted(component))
    return components


def validate_all(
    queries: Sequence[Query],
    *,
    streams: Collection[str] | None = None,
    registered: Sequence[Query] = (),
    text: str | None = None,
) -> tuple[list[Query], list[XsclValidationError]]:
    """Validate queries registered together: ``(valid queries in input order, errors)``.

    ``registered`` are queries accepted earlier: they are taken as valid and
    never rejected, but their ids are taken, their PUBLISH streams are known and
    they count in PUBLISH cycles. Order of checks: per-query errors and
    duplicate ids (V007, the later query is rejected), then PUBLISH cycles
    (V005, every new query of a cycle), then, with a catalog, unknown streams
    (V004) to a fixpoint, since a rejected query's PUBLISH stream is not known.

    Many queries are checked with the cyclic GC paused: the cycle check's first
    allocations otherwise set off generation scans over every parsed AST object
    (100,000 queries: 8.1 -> 1.3 CPU-s, docs/benchmarks.md).
    """
    with gc_paused(len(queries) + len(registered) >= GC_PAUSE_QUERIES):
        return _validate_all(queries, streams, registered, text)


def _validate_all(
    queries: Sequence[Query],
    streams: Collection[str] | None,
    registered: Sequence[Query],
    text: str | None,
) -> tuple[list[Query], list[XsclValidationError]]:
    errors: list[XsclValidationError] = []
    candidates: list[Query] = []
    seen = {q.qid for q in registered}
    for query in queries:
        own = structural_errors(query, text=text)
        if query.qid in seen:
            own.insert(
                0,
                _error(
                    "XSCL-V007",
                    f"duplicate query id {query.qid!r}",
                    query,
                    query.span,
                    ("a query id not used by another query",),
                    text,
                ),
            )
        seen.add(query.qid)
        if own:
            errors.extend(own)
        else:
            candidates.append(query)
    cycles = publish_cycles([*registered, *candidates])
    for query in candidates:
        if query.qid in cycles:
            stream, members = cycles[query.qid]
            errors.append(_cycle_error(query, stream, members, text))
    candidates = [q for q in candidates if q.qid not in cycles]
    if streams is not None:
        catalog = set(streams) | {q.publish for q in registered if q.publish is not None}
        while True:
            known = catalog | {q.publish for q in candidates if q.publish is not None}
            bad = [q for q in candidates if any(b.stream not in known for b in q.blocks)]
            if not bad:
                break
            for query in bad:
                for block in query.blocks:
                    if block.stream not in known:
                        errors.append(
                            _error(
                                "XSCL-V004",
                                f"unknown stream {block.stream!r}",
                                query,
                                block.span,
                                _limited(known),
                                text,
                            )
                        )
            rejected = {q.qid for q in bad}
            candidates = [q for q in candidates if q.qid not in rejected]
    return candidates, errors
