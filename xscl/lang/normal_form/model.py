"""The normal form of a query: the contract between the language layer and the engines.

A ``NormalQuery`` is what Stage 1 (``xscl.xpath``), the templates
(``xscl.templates``) and the engines consume; nothing downstream reads the
surface AST's predicates again. It is produced by the rewrite rules of
``xscl.lang.normal_form`` (spec sections 3.3 and 3.5, thesis 6.3-6.4).

Vocabulary
----------
* A **variable definition** (``VarDef``) is the canonical identity of a variable
  (spec 3.5): the stream plus the *absolute* path from the document node to the
  bound node, with every filter that constrains any node on that path, written
  as a ``Block`` that binds no variable anywhere. Two variables, in any queries,
  with equal ``VarDef`` are one internal variable whose witnesses are computed
  and stored once. ``VarDef`` is hashable, so it is its own key.
* Inside a query, **pattern variables** are the user's variables that matter
  (join variables, SELECT variables) plus generated ones (named ``_b<i>_<k>``)
  for every branching point of a block's pattern, so that each block's pattern
  is a tree of variables: siblings under a generated variable must embed under
  the same node. Bindings that matter for nothing (existential, spec 3.3) are
  folded into filters of their parent's step.
* A **pattern edge** (parent, child) says the child's node is reached from the
  parent's node by the child's definition's steps beyond the parent's:
  ``child.steps[:len(parent.steps)] == parent.steps`` always holds.

Example: ``S//book->x1[./author->x2][./price] FOLLOWED BY {x2=y, 1h} S//blog[./author->y]``
gives block 0 with variables x1 (``S//book[./price]``) and x2
(``S//book[./price]/author``), edge (x1, x2); block 1 with y
(``S//blog/author``), no edges; one equality (x2, y); op FOLLOWED BY, 3.6e9 us.
"""

from __future__ import annotations

from dataclasses import dataclass

from xscl.lang.ast import Block, JoinKind, Query


@dataclass(frozen=True, slots=True)
class VarDef:
    """Canonical variable identity: a filter-only absolute path (``Block`` with no ``var``).

    ``path.steps == ()`` denotes the document's root element.
    """

    path: Block

    @property
    def stream(self) -> str:
        return self.path.stream


@dataclass(frozen=True, slots=True)
class PatternVar:
    """One variable of a normalised block: its query-local name and definition."""

    name: str
    definition: VarDef
    generated: bool = False


@dataclass(frozen=True, slots=True)
class NormalBlock:
    """One block after normalisation: a tree of pattern variables.

    ``root`` is the top variable of the tree (``None`` only when the block binds
    no variable that matters: then it is a pure existence test, ``exists``).
    ``variables`` is in pre-order of the tree; ``edges`` are (parent, child)
    names. ``exists`` is the filter-only path the document must match at least
    once (the block's whole pattern with every binding erased).
    ``first_step`` is the definition of the block's first step's node (used to
    build SELECT * output, spec 3.4); ``None`` when the block has no step.
    """

    index: int
    stream: str
    root: str | None
    variables: tuple[PatternVar, ...]
    edges: tuple[tuple[str, str], ...]
    exists: VarDef
    first_step: VarDef | None


@dataclass(frozen=True, slots=True)
class NormalOp:
    """The operator between the composite of blocks 0..i and block i+1."""

    kind: JoinKind
    window_micros: int | None  # None = INF


@dataclass(frozen=True, slots=True)
class NormalEquality:
    """``left = right`` on string values; ``left`` is in a block not after ``right``'s.

    ``left_block``/``right_block`` are block indices. When they are equal, or
    both blocks are on the same side of the operator that introduced it, the
    equality is a filter (spec 3.2); the engines treat all equalities as one
    conjunction over the match.
    """

    left: str
    right: str
    left_block: int
    right_block: int


@dataclass(frozen=True, slots=True)
class NormalQuery:
    """A query in value-join normal form with canonical variable identities."""

    query: Query
    blocks: tuple[NormalBlock, ...]
    ops: tuple[NormalOp, ...]
    equalities: tuple[NormalEquality, ...]

    @property
    def qid(self) -> str:
        return self.query.qid

    @property
    def join_variables(self) -> frozenset[str]:
        """Variables that occur in some equality (they identify results, spec 3.3)."""
        return frozenset(v for e in self.equalities for v in (e.left, e.right))

    def variable(self, name: str) -> PatternVar:
        for block in self.blocks:
            for var in block.variables:
                if var.name == name:
                    return var
        raise KeyError(name)

    def block_of(self, name: str) -> int:
        for block in self.blocks:
            if any(v.name == name for v in block.variables):
                return block.index
        raise KeyError(name)
