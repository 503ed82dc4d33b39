"""The one error hierarchy: every code once in one table, documented, raised by its class.

The table is ``xscl.errors.ERROR_CODES`` (elementpath's model: a root exception,
classes that subclass the matching builtin, one factory).
"""

from __future__ import annotations

import ast
import pickle
import re
from pathlib import Path

import pytest

from xscl.errors import (
    ERROR_CODES,
    RETIRED_CODES,
    ConnectorError,
    EnvelopeSyntaxError,
    Stage1Error,
    SubscriptionError,
    XsclError,
    XsclValidationError,
    codes_markdown,
)

ROOT = Path(__file__).resolve().parents[1]
CODE = re.compile(r"\b(?:XSCL|CEL)-[A-Z]\d{3}\b")
BUILTINS = (SyntaxError, ValueError, OSError, RuntimeError)


def _table_keys() -> list[str]:
    """The keys of the ``ERROR_CODES`` literal as written (a dict would hide a repeat)."""
    tree = ast.parse((ROOT / "xscl" / "errors.py").read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.AnnAssign)
            and isinstance(node.target, ast.Name)
            and node.target.id == "ERROR_CODES"
        ):
            assert isinstance(node.value, ast.Dict)
            return [k.value for k in node.value.keys if isinstance(k, ast.Constant)]
    raise AssertionError("ERROR_CODES not found")


def test_codes_are_unique_well_formed_and_never_reused() -> None:
    keys = _table_keys()
    assert len(keys) == len(set(keys)) == len(ERROR_CODES)
    assert all(re.fullmatch(r"XSCL-[PVCXRSA]\d{3}|CEL-[PVES]\d{3}", code) for code in keys)
    assert not set(keys) & set(RETIRED_CODES)


@pytest.mark.parametrize("code", sorted(ERROR_CODES))
def test_each_code_is_built_by_its_class_and_subclasses_a_builtin(code: str) -> None:
    cls, template = ERROR_CODES[code]
    assert issubclass(cls, XsclError) and issubclass(cls, BUILTINS)
    assert template and "\n" not in template
    error = XsclError.from_code(code, source="in.jsonl", line=3, column=7)
    assert type(error) is cls and error.code == code and error.message == template
    assert str(error) == f"in.jsonl:3:7: {code} {template}"
    back = pickle.loads(pickle.dumps(error))
    assert type(back) is cls and back.to_dict() == error.to_dict()
    if cls.default_code is not None:  # a class that stands for one code
        assert cls.default_code == code and cls().code == code


def test_a_code_belongs_to_one_class() -> None:
    with pytest.raises(TypeError, match="XSCL-V005 is a PublishCycleError"):
        XsclValidationError("cycle", code="XSCL-V005")
    with pytest.raises(TypeError, match="not a Stage1Error"):
        Stage1Error.from_code("XSCL-C001")
    with pytest.raises(ValueError, match="unknown error code"):
        XsclError.from_code("XSCL-Z999")
    with pytest.raises(TypeError, match="needs one of the codes"):
        ConnectorError("no code")


def test_errors_carry_where_they_were_found() -> None:
    error = EnvelopeSyntaxError("not valid JSON", source="d.jsonl", line=4, column=9)
    assert isinstance(error, ValueError) and (error.line, error.column) == (4, 9)
    located = XsclError.from_code("XSCL-P003", "unexpected '}'", text="S//a\n }", offset=6)
    assert (located.line, located.column, located.excerpt) == (2, 2, " }\n ^")
    nested = SubscriptionError.from_code("XSCL-S010", "1 invalid", errors=[located])
    assert pickle.loads(pickle.dumps(nested)).errors == (located,)


def test_every_code_in_the_code_and_docs_is_in_the_table() -> None:
    """A code written anywhere (a bare string in an engine, a doc) is a known one."""
    known = set(ERROR_CODES) | set(RETIRED_CODES)
    places = [*(ROOT / "xscl").rglob("*.py"), *(ROOT / "docs").glob("*.md"), ROOT / "README.md"]
    for path in places:
        found = set(CODE.findall(path.read_text(encoding="utf-8")))
        assert found <= known, f"{path}: {sorted(found - known)}"
        if path.suffix == ".py" and path.name != "errors.py":
            assert not found & set(RETIRED_CODES), f"{path} raises a retired code"


def test_docs_list_every_code_from_the_table() -> None:
    text = (ROOT / "docs" / "errors.md").read_text(encoding="utf-8")
    assert text.endswith(codes_markdown()), (
        "docs/errors.md is out of date: regenerate its tables with "
        "python -c 'from xscl.errors import codes_markdown; print(codes_markdown(), end=\"\")'"
    )


#: Exceptions defined outside ``xscl/errors.py`` that are not errors of the table: each
#: is raised and caught inside one step and never leaves it.
INTERNAL_EXCEPTIONS = {
    "xscl/lang/cel/lexer.py:Failure": "a CEL syntax failure, raised as its CEL-P0xx error",
}


def _exception_classes() -> list[tuple[str, str, list[str]]]:
    """(module path, class name, base names) of every class deriving from an exception."""
    found = []
    for path in sorted((ROOT / "xscl").rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                bases = [ast.unparse(b) for b in node.bases]
                if any(b.endswith(("Error", "Exception")) for b in bases):
                    found.append((path.relative_to(ROOT).as_posix(), node.name, bases))
    return found


def test_there_is_one_error_world() -> None:
    """No module keeps codes or exception classes of its own (issue 36, deliverable 3):
    every public exception is an ``XsclError`` of the table, and only ``errors.py``
    holds a table of codes."""
    rivals = []
    for module, name, bases in _exception_classes():
        if module == "xscl/errors.py" or name.startswith("_"):
            continue
        if f"{module}:{name}" not in INTERNAL_EXCEPTIONS:
            rivals.append(f"{module}:{name}({', '.join(bases)})")
    assert not rivals
    for path in (ROOT / "xscl").rglob("*.py"):
        if path.name == "errors.py":
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        tables = [
            t.id
            for node in tree.body
            if isinstance(node, (ast.Assign, ast.AnnAssign))
            for t in (node.targets if isinstance(node, ast.Assign) else [node.target])
            if isinstance(t, ast.Name) and t.id.endswith("CODES")
        ]
        assert not tables, f"{path}: {tables}"


def test_every_dead_letter_carries_a_code_of_the_table() -> None:
    from xscl.connectors.dead_letters import DeadLetter

    for code in ERROR_CODES:
        error = XsclError.from_code(code, source="in", line=2)
        assert DeadLetter.from_error(error).code == code
    with pytest.raises(ValueError, match="ERROR_CODES"):
        DeadLetter(None, 1, None, None, "late", "late")
