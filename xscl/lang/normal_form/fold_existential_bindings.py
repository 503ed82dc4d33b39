"""Rule 2: erase existential bindings, so they become plain filters (spec 3.3, thesis 6.4.2).

The variables that *matter* are the join variables (in any equality) and the
SELECT variables. A binding is kept when its node's subtree binds a variable
that matters: the variable itself matters, or it is an ancestor on the path to
one (it is then a node of the block's variable tree, as in the thesis's join
graph, where ``x1`` of Q1 is the root above ``x2`` and ``x3``). Every other
binding is existential: different nodes for it never make different results,
so its name is erased and its step stays where it is, now a pure filter
(``PathPredicate`` / ``ComparisonPredicate``) on its parent step that must still
be embeddable.

``p`` is neither joined nor selected, ``a`` is joined (``b`` is kept: it is above
``a``); a compared binding folds the same way:

>>> from xscl.lang.parser import parse_query
>>> from xscl.lang.printer import format_query
>>> query = parse_query(
...     "S//book->b[./price->p][./author->a][./c->z = 'x'] FOLLOWED BY {a = y, 1h} T//blog->y")
>>> print(format_query(fold_existential_bindings(query)))
S//book->b[./price][./author->a][./c = 'x']
    FOLLOWED BY {a=y, 1h} T//blog->y
"""

from __future__ import annotations

from xscl.lang.ast import Query, Step
from xscl.lang.normal_form.paths import (
    map_predicate_paths,
    matter_variables,
    path_vars,
    rebuild_step,
    replace_block_steps,
    step_vars,
)


def fold_existential_bindings(query: Query) -> Query:
    """Erase every binding whose subtree binds no variable that matters."""
    matter = matter_variables(query)

    def fold(steps: tuple[Step, ...]) -> tuple[Step, ...]:
        folded: list[Step] = []
        for index, step in enumerate(steps):
            subtree = step_vars(step) | path_vars(steps[index + 1 :])
            keep = step.var is not None and bool(subtree & matter)
            predicates = tuple(map_predicate_paths(p, fold) for p in step.predicates)
            folded.append(rebuild_step(step, step.var if keep else None, predicates))
        return tuple(folded)

    return replace_block_steps(query, lambda _index, block: fold(block.steps))
