"""Stage 1: one shared pass per document from registered definitions to witnesses.

``Stage1`` is the thesis's XPath Evaluator (thesis 6.3).  Consumers (the
templates, the join layer) register canonical variable definitions
(:class:`~xscl.lang.normal_form.model.VarDef`), say what they need of each
(``require_value``, ``require_nodes``, ``require_pair``), and call
``evaluate_rows`` on documents.  Each document is parsed
safely once and walked once, whatever the number of definitions; see
:mod:`xscl.xpath.automaton` for the automaton and :mod:`xscl.xpath.witness`
for the output relations.

Variable ids are stable for the lifetime of a ``Stage1``: a definition keeps
its id even after it is unregistered and registered again.  A registered
definition holds its function predicates compiled (:class:`FunctionTable`)
until it is unregistered; ``presearch`` chooses how a transition's function
predicate candidates are screened (:mod:`xscl.xpath.presearch`: the index,
or every candidate verified).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass

from xscl.errors import Stage1Error
from xscl.lang.ast import FunctionPredicate, NodeTest, Step
from xscl.lang.normal_form.model import VarDef
from xscl.xpath.automaton import Automaton, TrieNode
from xscl.xpath.document_run import DocumentRun, walk_checks_only
from xscl.xpath.emission import NO_EMISSION, Emission, PairSpec, fixed_distance
from xscl.xpath.functions import FunctionTable
from xscl.xpath.predicates import PredicateEvaluator
from xscl.xpath.presearch import EveryCandidate, Presearch, ScreenFactory
from xscl.xpath.safe_parse import ParseLimits, parse_document
from xscl.xpath.witness import DocumentRows

#: The step a definition without steps (the root element) is evaluated as.
_ROOT_ELEMENT_STEPS: tuple[Step, ...] = (Step("/", NodeTest("wildcard")),)


@dataclass(slots=True)
class _Registration:
    definition: VarDef
    var_id: int
    node: TrieNode
    refcount: int


def _check_filter_only(steps: tuple[Step, ...]) -> None:
    for step in steps:
        if step.var is not None:
            raise Stage1Error.from_code("XSCL-X010", f"definition binds variable {step.var!r}")
        for predicate in step.predicates:
            path = getattr(predicate, "path", None)
            if path is not None:
                _check_filter_only(path.steps)


def function_expressions(steps: tuple[Step, ...]) -> Iterator[str]:
    """Every function predicate's expression in ``steps``, nested paths included."""
    for step in steps:
        for predicate in step.predicates:
            if isinstance(predicate, FunctionPredicate):
                yield predicate.expression
                continue
            path = getattr(predicate, "path", None)
            if path is not None:
                yield from function_expressions(path.steps)


class Stage1:
    """Shared evaluation of all registered definitions (thesis 6.3, spec 3.1)."""

    def __init__(self, limits: ParseLimits | None = None, *, presearch: bool = True) -> None:
        self.limits = limits if limits is not None else ParseLimits()
        self.presearch = presearch
        self._screen: ScreenFactory[TrieNode] = Presearch if presearch else EveryCandidate
        #: the compiled function predicates of the registered definitions
        self.functions = FunctionTable()
        self._automata: dict[str, Automaton] = {}
        self._ids: dict[VarDef, int] = {}
        self._definitions: dict[int, VarDef] = {}
        self._registered: dict[int, _Registration] = {}
        self._values: set[int] = set()
        self._nodes: set[int] = set()
        self._pairs: dict[tuple[int, int], PairSpec] = {}
        #: emissions per trie node (identity-keyed: trie node ids restart per stream)
        self._emission: dict[TrieNode, Emission] = {}
        self._pairs_index: dict[int, list[PairSpec]] | None = None
        #: documents evaluated, documents rejected per error code, function errors
        self.counters: Counter[str] = Counter()

    # ------------------------------------------------------------ registry
    def register(self, definition: VarDef) -> int:
        """Register one more use of ``definition``; returns its stable var id."""
        var_id = self._ids.get(definition)
        registration = self._registered.get(var_id) if var_id is not None else None
        if registration is not None:
            registration.refcount += 1
            return registration.var_id
        steps = definition.path.steps
        _check_filter_only(steps)
        self._acquire_functions(steps)
        if var_id is None:
            var_id = len(self._ids) + 1
            self._ids[definition] = var_id
            self._definitions[var_id] = definition
        automaton = self._automata.get(definition.stream)
        if automaton is None:
            automaton = Automaton(self._emission_of, self.functions, self._screen)
            self._automata[definition.stream] = automaton
        node = automaton.add_path(steps or _ROOT_ELEMENT_STEPS)
        if var_id not in node.var_ids:
            node.var_ids.append(var_id)
        self._registered[var_id] = _Registration(definition, var_id, node, 1)
        self._changed(definition.stream)
        return var_id

    def unregister(self, definition: VarDef) -> None:
        """Drop one use of ``definition``; at zero its requirements go too."""
        var_id = self._ids.get(definition)
        registration = self._registered.get(var_id) if var_id is not None else None
        if registration is None or var_id is None:
            raise KeyError(definition)
        registration.refcount -= 1
        if registration.refcount:
            return
        del self._registered[var_id]
        self._values.discard(var_id)
        self._nodes.discard(var_id)
        for key in [k for k in self._pairs if var_id in k]:
            del self._pairs[key]
        if var_id in registration.node.var_ids:
            registration.node.var_ids.remove(var_id)
        automaton = self._automata[definition.stream]
        automaton.remove_path(registration.node)
        if automaton.root.refcount == 0:
            del self._automata[definition.stream]
        for expression in function_expressions(definition.path.steps):
            self.functions.release(expression)
        self._changed(definition.stream)

    def _acquire_functions(self, steps: tuple[Step, ...]) -> None:
        """Hold the definition's function predicates compiled (``XSCL-X012``: none held)."""
        held: list[str] = []
        try:
            for expression in function_expressions(steps):
                self.functions.acquire(expression)
                held.append(expression)
        except Stage1Error:
            for expression in held:
                self.functions.release(expression)
            raise

    def var_id(self, definition: VarDef) -> int | None:
        """The id of a registered definition, or None."""
        var_id = self._ids.get(definition)
        return var_id if var_id in self._registered else None

    def definition(self, var_id: int) -> VarDef:
        return self._definitions[var_id]

    @property
    def registered(self) -> dict[int, VarDef]:
        """Currently registered definitions by var id."""
        return {v: r.definition for v, r in self._registered.items()}

    def _registration(self, var_id: int) -> _Registration:
        registration = self._registered.get(var_id)
        if registration is None:
            raise KeyError(f"var id {var_id} is not registered")
        return registration

    def require_value(self, var_id: int) -> None:
        """Emit ``value_nodes`` rows (var, node) for every node of ``var_id``.

        Each such node also gets its one ``values`` row (node, string value),
        shared by every variable whose value is required.
        """
        registration = self._registration(var_id)
        self._values.add(var_id)
        self._changed(registration.definition.stream)

    def release_value(self, var_id: int) -> None:
        self._values.discard(var_id)
        self._changed_var(var_id)

    def require_nodes(self, var_id: int) -> None:
        """Emit ``matches`` rows (node) for every node of ``var_id``."""
        registration = self._registration(var_id)
        self._nodes.add(var_id)
        self._changed(registration.definition.stream)

    def release_nodes(self, var_id: int) -> None:
        self._nodes.discard(var_id)
        self._changed_var(var_id)

    def require_pair(self, parent_id: int, child_id: int) -> None:
        """Emit ``bindings`` rows for the pattern edge (parent, child)."""
        parent = self._registration(parent_id)
        child = self._registration(child_id)
        p_steps = parent.definition.path.steps
        c_steps = child.definition.path.steps
        if (
            parent.definition.stream != child.definition.stream
            or c_steps[: len(p_steps)] != p_steps
            or len(c_steps) <= len(p_steps)
        ):
            raise Stage1Error.from_code(
                "XSCL-X011", f"({parent_id}, {child_id}) is not a pattern edge"
            )
        chain = tuple(child.node.chain_from(parent.node)) if p_steps else (child.node,)
        self._pairs[(parent_id, child_id)] = PairSpec(
            parent_id,
            child_id,
            chain,
            root_parent=not p_steps,
            fixed_distance=fixed_distance(chain) if p_steps else -1,
        )
        self._changed(parent.definition.stream)

    def release_pair(self, parent_id: int, child_id: int) -> None:
        self._pairs.pop((parent_id, child_id), None)
        self._changed_var(parent_id)

    def _changed_var(self, var_id: int) -> None:
        registration = self._registered.get(var_id)
        if registration is not None:
            self._changed(registration.definition.stream)

    def _changed(self, stream: str) -> None:
        self._emission.clear()
        self._pairs_index = None
        automaton = self._automata.get(stream)
        if automaton is not None:
            automaton.invalidate()

    def _emission_of(self, node: TrieNode) -> Emission:
        emission = self._emission.get(node)
        if emission is None:
            ids = sorted(node.var_ids)
            if not ids:
                emission = NO_EMISSION
            else:
                pairs = self._pairs_by_child() if self._pairs else {}
                emission = Emission.of(
                    values=tuple(v for v in ids if v in self._values),
                    nodes=tuple(v for v in ids if v in self._nodes),
                    pairs=tuple(spec for v in ids for spec in pairs.get(v, ())),
                )
            self._emission[node] = emission
        return emission

    def _pairs_by_child(self) -> dict[int, list[PairSpec]]:
        """Required pairs grouped by child var (cached until the next change)."""
        if self._pairs_index is None:
            index: dict[int, list[PairSpec]] = {}
            for _, spec in sorted(self._pairs.items()):
                index.setdefault(spec.child_var, []).append(spec)
            self._pairs_index = index
        return self._pairs_index

    # ----------------------------------------------------------- evaluation
    def evaluate_rows(
        self, stream: str, docid: str, ts_micros: int, xml: bytes | str
    ) -> DocumentRows:
        """The witness rows of one document; raises ``Stage1Error`` (an
        ``XmlDocumentError``) when it is rejected. ``docid`` and ``ts_micros`` name
        the document for the caller; the rows do not carry them."""
        root = parse_document(xml, self.limits)
        automaton = self._automata.get(stream)
        evaluator = PredicateEvaluator(root, self.functions)
        rows = DocumentRows([], [], [], [])
        if automaton is None:
            walk_checks_only(root, self.limits.max_depth)
        else:
            DocumentRun(automaton, evaluator, rows).walk(root, self.limits.max_depth)
        self.counters["function_errors"] += evaluator.function_errors
        self.counters["documents"] += 1
        return rows
