"""From a normalised query to its template and its R_T row (the whole rewrite pipeline).

``assign_template`` chains the pure steps: ``build_join_graph`` (6.4.1) ->
``reduce_join_graph`` (6.4.2) -> ``canonical_template``. The result says which
query variable (and which effective definition, with dropped branches folded in)
fills each meta-variable of the template.

Thesis Q2 gives the row ``Q2 x1 x2 x7 x4 x5 x8 1d`` of the thesis's Table 6.4(a):

>>> from xscl.lang.normal_form import normalize
>>> from xscl.lang.parser import parse_query
>>> row = assign_template(normalize(parse_query(
...     "Q2: S//book->x1[./author->x2][./category->x7]"
...     " FOLLOWED BY {x2=x5 AND x7=x8, 1d} S//blog->x4[./author->x5][./category->x8]")))
>>> row.qid, row.names, row.windows
('Q2', ('x1', 'x2', 'x7', 'x4', 'x5', 'x8'), (86400000000,))
"""

from __future__ import annotations

from dataclasses import dataclass

from xscl.lang.ast import JoinKind
from xscl.lang.normal_form.model import NormalQuery, VarDef
from xscl.templates.canonical import Template, canonical_template
from xscl.templates.graph_minor import reduce_join_graph
from xscl.templates.join_graph import build_join_graph


@dataclass(frozen=True, slots=True)
class TemplateAssignment:
    """A query's template plus what fills each of its meta-variables."""

    qid: str
    template: Template
    names: tuple[str, ...]
    definitions: tuple[VarDef, ...]
    kinds: tuple[JoinKind, ...]
    windows: tuple[int | None, ...]


def assign_template(query: NormalQuery) -> TemplateAssignment:
    """Build, reduce and canonicalise ``query``'s join graph (see module doc)."""
    reduced = reduce_join_graph(build_join_graph(query))
    template, names = canonical_template(reduced)
    definitions = tuple(reduced.node(name).definition for name in names)
    return TemplateAssignment(
        qid=query.qid,
        template=template,
        names=names,
        definitions=definitions,
        kinds=reduced.kinds,
        windows=reduced.windows,
    )
