"""The template registry: one query table R_T per template (thesis 6.4.3, Table 6.4(a)).

A row of R_T is ``(qid, var1..varN, window_1..window_m, operator_1..operator_m)``:
``var_i`` is the id of the i-th meta-variable's canonical definition, given by the
``intern`` function (Stage 1's ``register``, so ids are shared with the witness
relations). Queries are data: adding or removing one touches one row.

Example::

    registry = TemplateRegistry(intern=stage1.register)
    row = registry.add(normalize(q1))      # -> R_T row of q1's template
    registry.table(row.template).rows      # {'Q1': QueryRow(...), ...}
    registry.remove('Q1')
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from xscl.lang.ast import JoinKind
from xscl.lang.normal_form.model import NormalQuery, VarDef
from xscl.templates.assign import TemplateAssignment, assign_template
from xscl.templates.canonical import Template


@dataclass(frozen=True, slots=True)
class QueryRow:
    """One row of a query table R_T."""

    qid: str
    var_ids: tuple[int, ...]
    windows: tuple[int | None, ...]
    kinds: tuple[JoinKind, ...]
    names: tuple[str, ...]
    template: Template


@dataclass
class QueryTable:
    """R_T of one template: rows by query id, plus a hash index on the var columns."""

    template: Template
    template_id: int
    rows: dict[str, QueryRow] = field(default_factory=dict)
    by_vars: dict[tuple[int, ...], dict[str, QueryRow]] = field(default_factory=dict)

    def insert(self, row: QueryRow) -> None:
        self.rows[row.qid] = row
        self.by_vars.setdefault(row.var_ids, {})[row.qid] = row

    def delete(self, qid: str) -> QueryRow | None:
        row = self.rows.pop(qid, None)
        if row is not None:
            bucket = self.by_vars[row.var_ids]
            del bucket[qid]
            if not bucket:
                del self.by_vars[row.var_ids]
        return row


class _LocalInterner:
    """Numbers definitions in first-seen order (used when no Stage 1 is attached)."""

    def __init__(self) -> None:
        self.ids: dict[VarDef, int] = {}

    def __call__(self, definition: VarDef) -> int:
        return self.ids.setdefault(definition, len(self.ids))


class TemplateRegistry:
    """All templates and their query tables; see the module docstring."""

    def __init__(self, intern: Callable[[VarDef], int] | None = None) -> None:
        self._intern: Callable[[VarDef], int] = intern or _LocalInterner()
        self._tables: dict[Template, QueryTable] = {}
        self._template_of: dict[str, Template] = {}
        self._next_id = 0

    def add(self, query: NormalQuery) -> QueryRow:
        """Register ``query`` (replacing a query with the same id); return its R_T row."""
        return self.add_assignment(assign_template(query))

    def add_assignment(self, assignment: TemplateAssignment) -> QueryRow:
        """Register an already computed assignment (``ShapeMemo`` reuses them); return its row."""
        if assignment.qid in self._template_of:
            self.remove(assignment.qid)
        table = self._tables.get(assignment.template)
        if table is None:
            table = QueryTable(assignment.template, self._next_id)
            self._next_id += 1
            self._tables[assignment.template] = table
        row = QueryRow(
            qid=assignment.qid,
            var_ids=tuple(self._intern(d) for d in assignment.definitions),
            windows=assignment.windows,
            kinds=assignment.kinds,
            names=assignment.names,
            template=assignment.template,
        )
        table.insert(row)
        self._template_of[assignment.qid] = assignment.template
        return row

    def remove(self, qid: str) -> bool:
        """Unregister query ``qid``; drop its table when it becomes empty."""
        template = self._template_of.pop(qid, None)
        if template is None:
            return False
        table = self._tables[template]
        table.delete(qid)
        if not table.rows:
            del self._tables[template]
        return True

    def table(self, template: Template) -> QueryTable:
        return self._tables[template]

    def tables(self) -> Iterator[QueryTable]:
        """Query tables in template-id (creation) order."""
        return iter(sorted(self._tables.values(), key=lambda t: t.template_id))

    def template_of(self, qid: str) -> Template:
        return self._template_of[qid]

    def __len__(self) -> int:
        return len(self._template_of)

    @property
    def template_count(self) -> int:
        return len(self._tables)
