"""Rule 4: bind a generated variable at every unbound branching point (thesis 6.3.1).

A node is a *branching point* when two or more of its branches (each predicate,
and the continuation of its path) contain variables that matter. Siblings under
it must embed under the same node, which the variable tree can only express if
the node is a variable. A user binding there is kept by rule 2; an unbound
branching point gets ``_b<block>_<k>``, ``k`` counting from 0 in pre-order
(node, then its predicates in canonical order, then its continuation), so the
names do not depend on how predicates were written. A name that the query
already binds is skipped (the next ``k`` is taken). With every branching point
bound, the block's variables form a tree whose root is the highest variable
(the least common ancestor of all the variables that matter).

``a`` and ``t`` are joined, so ``book`` is a branching point in block 0, and
``blog`` in block 1:

>>> from xscl.lang.parser import parse_query
>>> from xscl.lang.printer import format_query
>>> query = parse_query("S//book[./author->a][./title->t]"
...                     " JOIN {a = b AND t = u, 1d} T//blog[./author->b][./title->u]")
>>> print(format_query(number_generated_branches(query)))
S//book->_b0_0[./author->a][./title->t]
    JOIN {a=b AND t=u, 1d} T//blog->_b1_0[./author->b][./title->u]
"""

from __future__ import annotations

from itertools import count

from xscl.lang.ast import Query, Step
from xscl.lang.normal_form.paths import (
    is_branching_point,
    map_predicate_paths,
    matter_variables,
    query_bindings,
    rebuild_step,
    replace_block_steps,
)


def number_generated_branches(query: Query) -> Query:
    """Bind ``_b<block>_<k>`` at every unbound branching point of every block."""
    matter = matter_variables(query)
    taken = frozenset(step.var for _index, step in query_bindings(query) if step.var)
    return replace_block_steps(
        query, lambda index, block: _number_block(index, block.steps, matter, taken)
    )


def _number_block(
    block_index: int, steps: tuple[Step, ...], matter: frozenset[str], taken: frozenset[str]
) -> tuple[Step, ...]:
    names = (f"_b{block_index}_{k}" for k in count())
    fresh = (name for name in names if name not in taken)

    def number(steps: tuple[Step, ...]) -> tuple[Step, ...]:
        # Pre-order: a node's name is drawn before its predicates and continuation.
        out: list[Step] = []
        for index, step in enumerate(steps):
            var = step.var
            if var is None and is_branching_point(steps, index, matter):
                var = next(fresh)
            predicates = tuple(map_predicate_paths(p, number) for p in step.predicates)
            out.append(rebuild_step(step, var, predicates))
        return tuple(out)

    return number(steps)
