"""Query tables R_T, conjunctive-query plans and the explain section."""

from __future__ import annotations

from xscl.lang.normal_form import normalize
from xscl.lang.parser import parse_queries
from xscl.templates import TemplateRegistry, explain_templates, template_plan

TEXT = """
Q1: S//book->x1[./author->x2][./title->x3]
    FOLLOWED BY {x2=x5 AND x3=x6, 1h} S//blog->x4[./author->x5][./title->x6];
Q2: S//book->x1[./author->x2][./category->x7]
    FOLLOWED BY {x2=x5 AND x7=x8, 1d} S//blog->x4[./author->x5][./category->x8];
Q3: S//blog->x4[./author->x5][./title->x6]
    FOLLOWED BY {x5=x5' AND x6=x6', 7d} S//blog->x4'[./author->x5'][./title->x6'];
Q4: S//a->x JOIN {x=y, INF} T//b->y;
"""


def test_registry_rows_and_removal() -> None:
    registry = TemplateRegistry()
    for query in parse_queries(TEXT):
        registry.add(normalize(query))
    assert registry.template_count == 2 and len(registry) == 4
    table = registry.table(registry.template_of("Q1"))
    assert set(table.rows) == {"Q1", "Q2", "Q3"}
    q1, q3 = table.rows["Q1"], table.rows["Q3"]
    # Q3's left block is Q1's right block: the same definitions, the same var ids
    assert q3.var_ids[:3] == q1.var_ids[3:]
    assert len(set(q1.var_ids)) == 6
    assert registry.remove("Q2") and not registry.remove("Q2")
    assert set(table.rows) == {"Q1", "Q3"}
    registry.remove("Q4")
    assert registry.template_count == 1


def test_plan_prints_datalog_and_sql_like_figure_6_7() -> None:
    registry = TemplateRegistry()
    row = registry.add(normalize(parse_queries(TEXT)[0]))
    plan = template_plan(row.template)
    datalog = plan.to_datalog()
    assert datalog.startswith("R_out(qid, D0, D1, N1, N2, N3, N4, N5, N6) :-")
    assert "R_T(qid, V1, V2, V3, V4, V5, V6, W1, OP1)" in datalog
    assert "R_bin(D0, V1, V2, N1, N2)" in datalog and "R_doc(D1, V5, N5, S1)" in datalog
    assert "window(OP1, W1, [T0], T1)" in datalog
    sql = plan.to_sql()
    assert sql.startswith("SELECT DISTINCT a0.qid AS qid")
    assert "FROM R_T a0" in sql and "<> ''" in sql and "'FOLLOWED BY'" in sql
    assert sql.count("R_bin") == 4 and sql.count("R_doc ") == 4


def test_explain_lists_templates_rows_and_plans() -> None:
    text = explain_templates(list(parse_queries(TEXT)))
    assert text.startswith("Templates: 2 template(s) for 4 queries")
    assert "Q2: x1 x2 x7 x4 x5 x8; FOLLOWED BY 1d" in text
    assert "Q4: x y; JOIN INF" in text
    assert text.count("Datalog:") == 2 and text.count("SQL:") == 2
