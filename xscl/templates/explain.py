"""The templates section of ``xscl explain``: templates, their R_T rows and CQ_T plans.

Example output (abridged)::

    Templates: 1 template(s) for 3 queries
    T1  [v1(v2,v3)] FOLLOWED BY [v4(v5,v6)] v2=v5 v3=v6
      R_T rows:
        Q1  var1..var6 = x1 x2 x3 x4 x5 x6  windows 1h
        ...
      Datalog:
        R_out(qid, D0, D1, N1, ...) :- ...
      SQL:
        SELECT DISTINCT ...
"""

from __future__ import annotations

from collections.abc import Sequence

from xscl.lang.ast import Query
from xscl.lang.normal_form.model import NormalQuery
from xscl.templates.plan import template_plan
from xscl.templates.registry import TemplateRegistry


def format_window(micros: int | None) -> str:
    """A window in the largest unit that divides it (``INF`` for None)."""
    if micros is None:
        return "INF"
    for unit, size in (
        ("d", 86_400_000_000),
        ("h", 3_600_000_000),
        ("m", 60_000_000),
        ("s", 1_000_000),
        ("ms", 1_000),
    ):
        if micros and micros % size == 0:
            return f"{micros // size}{unit}"
    return f"{micros}us"


def explain_normal_templates(queries: Sequence[NormalQuery]) -> str:
    """The templates section for already normalised queries."""
    registry = TemplateRegistry()
    for query in queries:
        registry.add(query)
    lines = [f"Templates: {registry.template_count} template(s) for {len(registry)} queries"]
    for number, table in enumerate(registry.tables(), start=1):
        lines.append(f"T{number}  {table.template.describe()}")
        lines.append("  R_T rows (query: meta-variables = query variables; windows):")
        for row in table.rows.values():
            names = " ".join(n if not n.startswith("#") else "<doc>" for n in row.names)
            windows = " ".join(
                f"{k} {format_window(w)}" for k, w in zip(row.kinds, row.windows, strict=True)
            )
            lines.append(f"    {row.qid}: {names}; {windows}")
        plan = template_plan(table.template)
        lines.append("  Datalog:")
        lines.extend("    " + line for line in plan.to_datalog().splitlines())
        lines.append("  SQL:")
        lines.extend("    " + line for line in plan.to_sql().splitlines())
    return "\n".join(lines)


def explain_templates(queries: Sequence[Query]) -> str:
    """The templates section of ``xscl explain`` for parsed, validated queries."""
    from xscl.lang.normal_form import normalize

    return explain_normal_templates([normalize(q) for q in queries])
