"""Query templates (thesis 6.4): join graph -> graph minor -> canonical template -> R_T.

Each step is a small pure module: ``join_graph`` (6.4.1), ``graph_minor`` (6.4.2),
``canonical`` (isomorphism classes), ``assign`` (the pipeline), ``shapes`` (normal
form and assignment once per query shape), ``registry`` (one query table R_T per
template), ``plan`` (the conjunctive query CQ_T as Datalog/SQL), ``explain`` (the
``xscl explain`` section) and ``enumeration`` (thesis Table 6.3).
"""

from xscl.templates.assign import TemplateAssignment, assign_template
from xscl.templates.canonical import Template, canonical_template
from xscl.templates.explain import explain_normal_templates, explain_templates
from xscl.templates.graph_minor import reduce_join_graph
from xscl.templates.join_graph import JoinGraph, JoinNode, build_join_graph
from xscl.templates.plan import ConjunctivePlan, template_plan
from xscl.templates.registry import QueryRow, QueryTable, TemplateRegistry
from xscl.templates.shapes import ShapeMemo, query_shape

__all__ = [
    "ConjunctivePlan",
    "JoinGraph",
    "JoinNode",
    "QueryRow",
    "QueryTable",
    "ShapeMemo",
    "Template",
    "TemplateAssignment",
    "TemplateRegistry",
    "assign_template",
    "build_join_graph",
    "canonical_template",
    "explain_normal_templates",
    "explain_templates",
    "query_shape",
    "reduce_join_graph",
    "template_plan",
]
