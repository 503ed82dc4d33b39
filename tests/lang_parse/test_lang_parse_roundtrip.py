"""Property tests: ``parse(format(ast)) == ast``, also through a noisy independent renderer.

The noisy renderer writes the same AST with random keyword case, random
whitespace and ``--`` comments between tokens, ``AS`` for ``->``, ``[a]`` for
``[./a]``, double-quoted literals, ``SELECT * FROM`` / ``FROM`` for no SELECT,
and a space before window units, so the parser's normalisations are checked
against an implementation that shares no code with ``xscl.lang.printer``.
"""

from __future__ import annotations

from decimal import Decimal

from hypothesis import given
from hypothesis import strategies as st

from tests.lang_parse.strategies import queries, query_files
from tests.profiles import examples
from xscl.lang import format_file, format_query, parse_file, parse_query
from xscl.lang.ast import (
    Block,
    ComparisonPredicate,
    FunctionPredicate,
    JoinOp,
    NodeTest,
    NumberLiteral,
    PathPredicate,
    Predicate,
    Query,
    QueryFile,
    RelPath,
    Step,
    StringLiteral,
    Window,
)

SETTINGS = examples(60)


@SETTINGS
@given(queries())
def test_format_then_parse_query_is_identity(query: Query) -> None:
    text = format_query(query)
    assert parse_query(text, namespaces=query.namespaces, qid=query.qid) == query


@SETTINGS
@given(query_files())
def test_format_then_parse_file_is_identity(qf: QueryFile) -> None:
    result = parse_file(format_file(qf))
    assert result.errors == ()
    assert result.namespaces == qf.namespaces
    assert result.queries == qf.queries


@SETTINGS
@given(query_files())
def test_format_is_a_fixed_point(qf: QueryFile) -> None:
    text = format_file(qf)
    assert format_file(parse_file(text)) == text


# ---------------------------------------------------------------------------- noisy renderer

_WORDISH = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.'-é")
_SEPARATORS = ["", "", " ", "  ", "\n", "\t ", " -- c;'\"]\n", "\n  -- JOIN {\n  "]


class _Noisy:
    """Renders an AST token by token with random separators and spellings."""

    def __init__(self, data: st.DataObject) -> None:
        self.draw = data.draw
        self.tokens: list[str] = []

    def choice(self, *options: str) -> str:
        return self.draw(st.sampled_from(options))

    def flag(self) -> bool:
        return self.draw(st.booleans())

    def kw(self, word: str) -> None:
        cases = self.draw(st.lists(st.booleans(), min_size=len(word), max_size=len(word)))
        self.tokens.append(
            "".join(c.upper() if up else c.lower() for c, up in zip(word, cases, strict=True))
        )

    def tok(self, text: str) -> None:
        self.tokens.append(text)

    def text(self) -> str:
        out = self.tokens[0]
        for token in self.tokens[1:]:
            sep = self.draw(st.sampled_from(_SEPARATORS))
            if sep == "" and (out[-1] in _WORDISH and token[0] in _WORDISH):
                sep = " "
            out += sep + token
        return out

    def string(self, value: str) -> None:
        quote = self.choice("'", '"')
        self.tok(quote + value.replace(quote, quote * 2) + quote)

    def node_test(self, test: NodeTest) -> None:
        if test.kind == "wildcard":
            self.tok("*")
        elif test.kind == "text":
            self.tok(self.choice("text()", "text ( )"))
        else:
            name = f"{test.prefix}:{test.local}" if test.prefix else str(test.local)
            if test.kind == "attribute":
                self.tok("@")
            self.tok(name)

    def step(self, step: Step, *, axis: bool = True) -> None:
        if axis:
            self.tok(step.axis)
        self.node_test(step.test)
        if step.var is not None:
            if self.flag():
                self.kw("AS")
            else:
                self.tok("->")
            self.tok(step.var)
        for predicate in step.predicates:
            self.predicate(predicate)

    def rel_path(self, path: RelPath) -> None:
        steps = path.steps
        if steps and steps[0].axis == "/" and self.flag():
            self.step(steps[0], axis=False)  # implicit child axis: [author]
            steps = steps[1:]
        else:
            self.tok(".")
        for step in steps:
            self.step(step)

    def predicate(self, predicate: Predicate) -> None:
        self.tok("[")
        if isinstance(predicate, FunctionPredicate):
            self.tok(predicate.expression)
        elif isinstance(predicate, PathPredicate):
            self.rel_path(predicate.path)
        else:
            assert isinstance(predicate, ComparisonPredicate)
            self.rel_path(predicate.path)
            self.tok(predicate.op)
            if isinstance(predicate.literal, StringLiteral):
                self.string(predicate.literal.value)
            else:
                assert isinstance(predicate.literal, NumberLiteral)
                self.tok(format(predicate.literal.value, "f"))
        self.tok("]")

    def query(self, q: Query) -> None:
        if q.explicit_id:
            self.tok(q.qid + self.choice(":", " :", "\t:"))
        if q.select is not None:
            self.kw("SELECT")
            for i, var in enumerate(q.select):
                if i:
                    self.tok(",")
                self.tok(var)
            self.kw("FROM")
        else:
            form = self.choice("", "FROM", "SELECT * FROM")
            for word in form.split():
                self.tok("*") if word == "*" else self.kw(word)
        for i, block in enumerate(q.blocks):
            if i:
                op = q.ops[i - 1]
                for word in op.kind.split():
                    self.kw(word)
                self.tok("{")
                if not op.equalities:
                    self.kw("TRUE")
                for j, eq in enumerate(op.equalities):
                    if j:
                        self.kw("AND")
                    self.tok(eq.left)
                    self.tok("=")
                    self.tok(eq.right)
                self.tok(",")
                if op.window.amount is None:
                    self.kw("INF")
                else:
                    amount = format(op.window.amount, "f")
                    if op.window.unit == "s" and self.flag():
                        self.tok(amount)  # no unit means seconds
                    else:
                        self.tok(amount + self.choice("", " ", "\n") + op.window.unit)
                self.tok("}")
            self.tok(block.stream)
            for step in block.steps:
                self.step(step)
        if q.publish is not None:
            self.kw("PUBLISH")
            self.tok(q.publish)


@SETTINGS
@given(query_files(), st.data())
def test_noisy_rendering_parses_to_the_same_ast(qf: QueryFile, data: st.DataObject) -> None:
    noisy = _Noisy(data)
    for prefix, uri in qf.namespaces:
        noisy.kw("DECLARE")
        noisy.kw("NAMESPACE")
        noisy.tok(prefix)
        noisy.tok("=")
        noisy.string(uri)
        noisy.tok(";")
    for i, query in enumerate(qf.queries):
        if i:
            noisy.tok(";")
        noisy.query(query)
    if noisy.flag():
        noisy.tok(";")
    text = noisy.text()
    result = parse_file(text)
    assert result.errors == (), text
    assert result.namespaces == qf.namespaces
    assert result.queries == qf.queries


def test_canonical_text_of_a_rich_query() -> None:
    text = (
        "declare namespace dc = 'http://purl.org/dc/elements/1.1/';\n"
        "Q9: select x, y' from S//item AS x[author][@xml:lang = \"en\"][ contains(., 'a') ]"
        "[./price >= 1E+2] followed by {x = y' and x=x, 90 m} T/entry/dc:creator->y' "
        "join {true, inf} U publish Out"
    )
    canonical = (
        'DECLARE NAMESPACE dc = "http://purl.org/dc/elements/1.1/";\n'
        "Q9: SELECT x, y' FROM S//item->x[./author][./@xml:lang = 'en'][contains(., 'a')]"
        "[./price >= 100]\n"
        "    FOLLOWED BY {x=y' AND x=x, 90m} T/entry/dc:creator->y'\n"
        "    JOIN {TRUE, INF} U PUBLISH Out;\n"
    )
    assert format_file(parse_file(text.replace("1E+2", "100"))) == canonical


def test_printer_spells_windows_and_numbers_exactly() -> None:
    query = parse_query("S[. = -0.000100] JOIN {TRUE, 1.50h} T".replace("S[", "S/a["))
    assert format_query(query) == "S/a[. = -0.000100]\n    JOIN {TRUE, 1.50h} T"
    assert parse_query(format_query(query)) == query
    exponent = Query(
        "q1",
        (Block("S"), Block("T")),
        (JoinOp("JOIN", (), Window(Decimal("1E+3"), "ms")),),
        explicit_id=False,
    )
    assert format_query(exponent) == "S\n    JOIN {TRUE, 1000ms} T"
    assert parse_query(format_query(exponent)) == exponent


def test_name_ending_in_hyphen_keeps_its_binding() -> None:
    query = parse_query("S//a- ->x")
    assert query.blocks[0].steps[0].test.local == "a-"
    assert query.blocks[0].steps[0].var == "x"
    assert format_query(query) == "S//a- ->x"
    assert parse_query(format_query(query)) == query
