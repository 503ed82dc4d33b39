"""Each template's conjunctive query as a small logical plan (thesis 6.4.4, Figure 6.7).

The plan is a list of relational atoms over the witness relations plus the
template's query table, and a few built-in conditions; it prints as Datalog and
as SQL. Relations (a document ``D`` is the pair (stream, docid)):

* ``R_docTS(D, ts)`` — documents and their timestamps;
* ``R_bin(D, var1, var2, node1, node2)`` — pairs of bindings (ancestor, descendant);
* ``R_doc(D, var, node, strval)`` — bound nodes of joined variables and their string values;
* ``R_match(D, var, node)`` — documents matching a block that joins nothing;
* ``R_T(qid, var1..varN, w1..wm, op1..opm)`` — one row per query of the template.

The thesis's Q1/Q2/Q3 template:

>>> from xscl.templates.canonical import Template
>>> q1 = Template(("FOLLOWED BY",), (0, 0, 0, 1, 1, 1), (-1, 0, 0, -1, 3, 3), (False,) * 6,
...               ((1, 4), (2, 5)))
>>> print(template_plan(q1).to_datalog())
R_out(qid, D0, D1, N1, N2, N3, N4, N5, N6) :-
  R_T(qid, V1, V2, V3, V4, V5, V6, W1, OP1),
  R_docTS(D0, T0),
  R_docTS(D1, T1),
  R_bin(D0, V1, V2, N1, N2),
  R_bin(D0, V1, V3, N1, N3),
  R_bin(D1, V4, V5, N4, N5),
  R_bin(D1, V4, V6, N4, N6),
  R_doc(D0, V2, N2, S1),
  R_doc(D1, V5, N5, S1),
  R_doc(D0, V3, N3, S2),
  R_doc(D1, V6, N6, S2),
  S1 != '',
  S2 != '',
  D0 != D1,
  window(OP1, W1, [T0], T1).
"""

from __future__ import annotations

from dataclasses import dataclass

from xscl.templates.canonical import Template

SCHEMAS: dict[str, tuple[str, ...]] = {
    "R_docTS": ("doc", "ts"),
    "R_bin": ("doc", "var1", "var2", "node1", "node2"),
    "R_doc": ("doc", "var", "node", "strval"),
    "R_match": ("doc", "var", "node"),
}


@dataclass(frozen=True)
class Atom:
    """``relation(args)``; every argument is a Datalog variable name."""

    relation: str
    args: tuple[str, ...]
    columns: tuple[str, ...]


@dataclass(frozen=True)
class Condition:
    """A built-in condition, with its Datalog and SQL spellings (SQL over variable names)."""

    datalog: str
    sql: str


@dataclass(frozen=True)
class ConjunctivePlan:
    """The conjunctive query CQ_T of a template."""

    name: str
    head: tuple[str, ...]
    atoms: tuple[Atom, ...]
    conditions: tuple[Condition, ...]

    def to_datalog(self) -> str:
        body = [f"{a.relation}({', '.join(a.args)})" for a in self.atoms]
        body += [c.datalog for c in self.conditions]
        return f"{self.name}({', '.join(self.head)}) :-\n  " + ",\n  ".join(body) + "."

    def to_sql(self) -> str:
        binding: dict[str, str] = {}
        where: list[str] = []
        tables: list[str] = []
        for number, atom in enumerate(self.atoms):
            alias = f"a{number}"
            tables.append(f"{atom.relation} {alias}")
            for arg, column in zip(atom.args, atom.columns, strict=True):
                ref = f"{alias}.{column}"
                if arg in binding:
                    where.append(f"{binding[arg]} = {ref}")
                else:
                    binding[arg] = ref
        for condition in self.conditions:
            text = condition.sql
            for var in sorted(binding, key=len, reverse=True):
                text = text.replace("{" + var + "}", binding[var])
            where.append(text)
        select = ", ".join(f"{binding[v]} AS {v.lower()}" for v in self.head)
        return (
            f"SELECT DISTINCT {select}\nFROM "
            + ",\n     ".join(tables)
            + "\nWHERE "
            + "\n  AND ".join(where)
            + ";"
        )


def template_plan(template: Template, name: str = "R_out") -> ConjunctivePlan:
    """Build CQ_T for ``template`` (see the module docstring)."""
    n, m = template.size, len(template.kinds)
    v = [f"V{i + 1}" for i in range(n)]
    node = [f"N{i + 1}" for i in range(n)]
    doc = [f"D{b}" for b in range(template.block_count)]
    ts = [f"T{b}" for b in range(template.block_count)]
    windows = [f"W{k + 1}" for k in range(m)]
    ops = [f"OP{k + 1}" for k in range(m)]
    rt_columns = (
        "qid",
        *[f"var{i + 1}" for i in range(n)],
        *[f"w{k + 1}" for k in range(m)],
        *[f"op{k + 1}" for k in range(m)],
    )
    atoms = [Atom("R_T", ("qid", *v, *windows, *ops), rt_columns)]
    atoms += [
        Atom("R_docTS", (doc[b], ts[b]), SCHEMAS["R_docTS"]) for b in range(template.block_count)
    ]
    for i, parent in enumerate(template.parents):
        if parent >= 0:
            atoms.append(
                Atom(
                    "R_bin",
                    (doc[template.blocks[i]], v[parent], v[i], node[parent], node[i]),
                    SCHEMAS["R_bin"],
                )
            )
    conditions: list[Condition] = []
    for e, (i, j) in enumerate(template.value_edges):
        s = f"S{e + 1}"
        atoms.append(Atom("R_doc", (doc[template.blocks[i]], v[i], node[i], s), SCHEMAS["R_doc"]))
        if j != i:
            atoms.append(
                Atom("R_doc", (doc[template.blocks[j]], v[j], node[j], s), SCHEMAS["R_doc"])
            )
        conditions.append(Condition(f"{s} != ''", "{" + s + "} <> ''"))
    for i, is_doc in enumerate(template.documents):
        if is_doc:
            atoms.append(
                Atom("R_match", (doc[template.blocks[i]], v[i], node[i]), SCHEMAS["R_match"])
            )
    for a in range(template.block_count):
        for b in range(a + 1, template.block_count):
            conditions.append(
                Condition(f"{doc[a]} != {doc[b]}", "{" + doc[a] + "} <> {" + doc[b] + "}")
            )
    for k in range(m):
        earlier = ts[: k + 1]
        new = ts[k + 1]
        conditions.append(
            Condition(
                f"window({ops[k]}, {windows[k]}, [{', '.join(earlier)}], {new})",
                _window_sql(ops[k], windows[k], earlier, new),
            )
        )
    head = ("qid", *doc, *node)
    return ConjunctivePlan(name, head, tuple(atoms), tuple(conditions))


def _window_sql(op: str, window: str, earlier: list[str], new: str) -> str:
    """Spec 3.2's chain window test in SQL (``w IS NULL`` = INF)."""
    refs = ["{" + t + "}" for t in earlier]
    start = refs[0] if len(refs) == 1 else f"LEAST({', '.join(refs)})"
    end = refs[0] if len(refs) == 1 else f"GREATEST({', '.join(refs)})"
    t, w, o = "{" + new + "}", "{" + window + "}", "{" + op + "}"
    return (
        f"(({o} = 'FOLLOWED BY' AND {end} < {t} AND ({w} IS NULL OR {t} - {start} <= {w}))"
        f" OR ({o} = 'JOIN' AND ({w} IS NULL"
        f" OR GREATEST({end}, {t}) - LEAST({start}, {t}) <= {w})))"
    )
