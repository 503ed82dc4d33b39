"""XPath 2.0 function predicates through elementpath (spec section 3.1).

A function predicate such as ``contains(./title, 'spark')`` holds when the
effective boolean value of the expression, evaluated with the context node as
context item, is true (a number is *not* a position test).  Unprefixed name
tests inside the expression match by local name in any namespace: before
compiling, every unprefixed name test is rewritten to ``*:name`` using the
token spans of elementpath's own parser, so operators, function names,
variables and string literals are never touched.  If the rewritten text does
not parse (e.g. a sequence type such as ``element(foo)``), the expression is
used as written.  ``Q{uri}local`` names select the XPath 3.0 parser.

Namespaces: the normal form writes prefixed names as canonical ``n0:``,
``n1:`` ... with a leading ``(:xmlns n0="uri":)`` comment per binding
(:func:`xscl.lang.normal_form.function_namespaces` reads them back); those
bindings are given to elementpath's parser, so ``contains(n0:title, 'x')``
tests the Atom ``title``.

Compilation is done once per registered definition and held while it is
registered (:class:`FunctionTable`, reference-counted: no cache to fall
out of, so no per-document compilation however many predicates there are).
Definitions that differ only in their string literals share one compiled
template (:mod:`xscl.xpath.function_template`), so a keyword subscription
costs its tuple of literals, not a token tree.  Evaluation errors make the
predicate false; they are reported as :class:`FunctionPredicateError` so
that callers can count them.  An expression that does not compile (the
query validation refuses those, ``XSCL-V009``) is false, counted, wherever
it is evaluated.

Regular expressions (``matches``, ``replace``, ``tokenize``,
``analyze-string``) run on Python's backtracking ``re``, which cannot be
interrupted once started, so a time budget cannot stop a pathological match.
:meth:`FunctionTable.acquire` therefore refuses (``XSCL-X012``), when a
definition is registered, a pattern that is not a string literal (a document
could otherwise supply it), that is not XPath regex syntax or has invalid
flags (it would fail on every document), or that nests an unbounded
quantifier inside a quantified group (``(a+)+``, ``(\\w*x)*``), the classic
exponential backtracking shape (:mod:`xscl.lang.regex_rules`, shared with the
query validation, which reports the same with a position, ``XSCL-V010``).
Overlapping alternatives (``(a|a)*``) are not detected.
"""

from __future__ import annotations

import re
from typing import Any

import elementpath
from elementpath import XPath2Parser, XPathContext
from elementpath.xpath30 import XPath30Parser
from elementpath.xpath_nodes import TextNode as ElementPathTextNode
from lxml import etree

from xscl.errors import FunctionPredicateError, Stage1Error
from xscl.lang.normal_form import function_namespaces
from xscl.lang.regex_rules import REGEX_FUNCTIONS, nested_quantifier, regex_problem
from xscl.xpath.direct_tests import DirectTest, SourceKey, direct_test
from xscl.xpath.function_template import PLACEHOLDER, placeholder_index, split_literals
from xscl.xpath.nodes import AttributeNode, Node, TextNode
from xscl.xpath.presearch_terms import Plan, Terms, instantiate, term_plan

__all__ = [
    "CompiledFunction",
    "DocumentFunctions",
    "FunctionTable",
    "compilation_count",
    "compile_expression",
    "local_name_rewrite",
    "nested_quantifier",
]

_NAMESPACES = {"xml": "http://www.w3.org/XML/1998/namespace"}

#: elementpath compilations so far in this process (tests: none per document)
_COMPILATIONS = [0]


def compilation_count() -> int:
    """How many expressions this process has compiled with elementpath."""
    return _COMPILATIONS[0]


def _parser_for(expression: str) -> Any:
    namespaces = {**_NAMESPACES, **function_namespaces(expression)}
    if "Q{" in expression:
        return XPath30Parser(namespaces=namespaces)
    return XPath2Parser(namespaces=namespaces)


def _name_test_spans(token: Any, parent_symbol: str | None, out: list[tuple[int, int]]) -> None:
    if token.symbol == "(name)" and parent_symbol not in (":", "$"):
        out.append(token.span)
        return
    for child in token:
        _name_test_spans(child, token.symbol, out)


def local_name_rewrite(expression: str) -> str:
    """Rewrite unprefixed name tests to ``*:name`` (raises if the text does not parse)."""
    root = _parser_for(expression).parse(expression)
    spans: list[tuple[int, int]] = []
    _name_test_spans(root, None, spans)
    text = expression
    for start, end in sorted(spans, reverse=True):
        text = text[:start] + "*:" + text[start:end] + text[end:]
    return text


def compile_expression(expression: str) -> Any:
    """The compiled root token of ``expression`` (local-name rewritten when possible)."""
    _COMPILATIONS[0] += 1
    try:
        rewritten = local_name_rewrite(expression)
    except elementpath.ElementPathError as exc:
        raise FunctionPredicateError(f"cannot compile {expression!r}: {exc}") from None
    try:
        return _parser_for(rewritten).parse(rewritten)
    except elementpath.ElementPathError:
        return _parser_for(expression).parse(expression)


class FunctionTemplate:
    """One compiled expression shared by the definitions that differ only in literals."""

    __slots__ = ("direct", "error", "plan", "refcount", "text", "token")

    def __init__(self, text: str) -> None:
        self.text = text
        self.refcount = 0
        self.token: Any = None
        self.error = ""
        self.plan: Plan = None
        #: decided without elementpath when it is one containment test (direct_tests)
        self.direct: DirectTest | None = None
        try:
            self.token = compile_expression(text)
        except Exception as exc:  # elementpath raises many types: all mean "does not compile"
            self.error = str(exc)
            return
        self.plan = term_plan(self.token)
        self.direct = direct_test(self.token)


class CompiledFunction:
    """A registered function predicate: its shared template and its own literals."""

    __slots__ = ("expression", "literals", "refcount", "regex", "template")

    def __init__(self, expression: str, template: FunctionTemplate, literals: tuple[str, ...]):
        self.expression = expression
        self.template = template
        self.literals = literals
        self.refcount = 0
        #: the regex of a direct ``matches`` test, compiled on first use (direct_tests)
        self.regex: re.Pattern[str] | bool | None = None

    def variables(self) -> dict[str, str]:
        """The template's external variables bound to this definition's literals."""
        return {f"{PLACEHOLDER}{i}": literal for i, literal in enumerate(self.literals)}

    def terms(self) -> Terms | None:
        """The presearch terms (:mod:`xscl.xpath.presearch_terms`); None: always a candidate."""
        return instantiate(self.template.plan, self.literals)

    def regex_refusal(self) -> str | None:
        """Why a regex of this predicate is refused at registration (``XSCL-X012``)."""
        token = self.template.token
        if token is None:
            return None
        problems: list[str] = []
        _regex_problems(token, self.literals, problems)
        return problems[0] if problems else None


def _literal_value(token: Any, literals: tuple[str, ...]) -> str | None:
    """The string a literal (or a template variable standing for one) holds, else None."""
    if token.symbol == "(string)":
        return str(token.value)
    if token.symbol == "$" and len(token) == 1:
        index = placeholder_index(str(token[0].value))
        if index is not None and index < len(literals):
            return literals[index]
    return None


def _regex_problems(token: Any, literals: tuple[str, ...], out: list[str]) -> None:
    if token.symbol in REGEX_FUNCTIONS and len(token) >= 2:
        pattern = _literal_value(token[1], literals)
        flag_index = 3 if token.symbol == "replace" else 2
        flags = _literal_value(token[flag_index], literals) if len(token) > flag_index else ""
        if pattern is None:
            out.append(f"the pattern of {token.symbol}() must be a string literal")
        elif flags is not None:
            problem = regex_problem(pattern, flags)
            if problem is not None:
                out.append(f"the pattern {pattern!r} of {token.symbol}() {problem[0]}")
    for child in token:
        _regex_problems(child, literals, out)


class FunctionTable:
    """The compiled function predicates of the registered definitions (reference-counted).

    ``acquire`` compiles an expression's template on first use (counted by
    :func:`compilation_count`) and holds it until the last ``release``; ``get``
    returns a held expression (an expression that was never acquired, as when
    a ``PredicateEvaluator`` is used on its own, is compiled and kept).
    """

    __slots__ = ("_functions", "_templates")

    def __init__(self) -> None:
        self._functions: dict[str, CompiledFunction] = {}
        self._templates: dict[str, FunctionTemplate] = {}

    def __len__(self) -> int:
        return len(self._functions)

    @property
    def template_count(self) -> int:
        return len(self._templates)

    def _template(self, text: str) -> FunctionTemplate:
        template = self._templates.get(text)
        if template is None:
            template = self._templates[text] = FunctionTemplate(text)
        return template

    def _compile(self, expression: str) -> CompiledFunction:
        text, literals = split_literals(expression)
        template = self._template(text)
        if template.token is None and literals:  # e.g. processing-instruction('x')
            if template.refcount == 0:
                del self._templates[text]
            text, literals = expression, ()
            template = self._template(text)
        template.refcount += 1
        compiled = CompiledFunction(expression, template, literals)
        self._functions[expression] = compiled
        return compiled

    def get(self, expression: str) -> CompiledFunction:
        compiled = self._functions.get(expression)
        if compiled is None:
            compiled = self._compile(expression)
        return compiled

    def acquire(self, expression: str) -> CompiledFunction:
        """Hold ``expression`` compiled; raises ``XSCL-X012`` for a refused regex."""
        compiled = self._functions.get(expression)
        if compiled is None:
            compiled = self._compile(expression)
            refusal = compiled.regex_refusal()
            if refusal is not None:
                self._drop(compiled)
                raise Stage1Error.from_code("XSCL-X012", f"{expression!r}: {refusal}")
        compiled.refcount += 1
        return compiled

    def release(self, expression: str) -> None:
        compiled = self._functions[expression]
        compiled.refcount -= 1
        if compiled.refcount <= 0:
            self._drop(compiled)

    def _drop(self, compiled: CompiledFunction) -> None:
        del self._functions[compiled.expression]
        template = compiled.template
        template.refcount -= 1
        if template.refcount <= 0:
            del self._templates[template.text]


class DocumentFunctions:
    """Evaluates function predicates on the nodes of one document.

    The elementpath node tree of the document is built lazily, once, on the
    first function predicate that the document needs.
    """

    __slots__ = ("_context", "_direct_values", "_root")

    def __init__(self, root: etree._Element) -> None:
        self._root = root
        self._context: XPathContext | None = None
        #: source values the direct tests read (direct_tests.DirectTest.decide)
        self._direct_values: dict[SourceKey, str | None] = {}

    def _item(self, context: XPathContext, node: Node) -> Any:
        owner = node.owner if isinstance(node, (AttributeNode, TextNode)) else node
        root: Any = context.root
        element_node: Any = root.elements[owner]
        if isinstance(node, AttributeNode):
            for attribute in element_node.attributes:
                if attribute.name == node.key:
                    return attribute
            raise FunctionPredicateError(f"attribute {node.key} not found")
        if isinstance(node, TextNode):
            texts = [c for c in element_node.children if isinstance(c, ElementPathTextNode)]
            return texts[node.index - 1]
        return element_node

    def holds(self, function: CompiledFunction, node: Node) -> bool:
        """Effective boolean value of ``function`` at ``node``; errors raise."""
        direct = function.template.direct
        if direct is not None and isinstance(node, etree._Element):
            verdict = direct.decide(node, function, self._direct_values)
            if verdict is not None:
                return verdict
        token = function.template.token
        if token is None:
            raise FunctionPredicateError(
                f"cannot compile {function.expression!r}: {function.template.error}"
            )
        try:
            if self._context is None:
                # the implicit timezone is UTC, as a ts without an offset (docs/language.md)
                self._context = XPathContext(root=self._root.getroottree(), timezone="Z")
            context = self._context
            context.item = self._item(context, node)
            context.position = 1
            context.size = 1
            context.axis = None
            variables: Any = function.variables() if function.literals else {}
            context.variables = variables
            return bool(token.boolean_value(token.evaluate(context)))
        except FunctionPredicateError:
            raise
        except Exception as exc:  # elementpath raises many types; all mean "false, counted"
            raise FunctionPredicateError(f"{function.expression!r}: {exc}") from None
