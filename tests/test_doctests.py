"""Every ``>>>`` example in the package runs, as written (SQLGlot's optimizer rules' habit).

Modules are found by scanning ``xscl`` for docstring examples, so a new one is
checked without being listed here.
"""

from __future__ import annotations

import doctest
import importlib
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "xscl"
MODULES = sorted(
    ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    for path in PACKAGE.rglob("*.py")
    if ">>> " in path.read_text(encoding="utf-8")
)


#: Modules whose examples are the documentation of a rule or step: they must keep one.
MUST_HAVE_EXAMPLES = [
    *(
        f"xscl.lang.normal_form.{rule}"
        for rule in (
            "qualify_namespaces",
            "fold_existential_bindings",
            "order_predicates",
            "number_generated_branches",
            "canonical_definitions",
            "orient_equalities",
        )
    ),
    *(
        f"xscl.templates.{step}"
        for step in ("join_graph", "graph_minor", "canonical", "assign", "plan", "shapes")
    ),
    "xscl.errors",
    "xscl.events.partitioning",
    "xscl.spark_plugin.cel.source",
    "xscl.results.feed_entry",
    "xscl.spark_plugin.job.shape",
    "xscl.service.worker_heap",
    "xscl.service.sharing.keys",
]


def test_modules_with_examples_are_found() -> None:
    assert set(MUST_HAVE_EXAMPLES) <= set(MODULES), sorted(set(MUST_HAVE_EXAMPLES) - set(MODULES))


@pytest.mark.parametrize("name", MODULES)
def test_examples_in_docstrings_hold(name: str) -> None:
    module = importlib.import_module(name)
    failed, attempted = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert attempted > 0, f"{name} has '>>> ' but no example ran"
    assert failed == 0, f"{failed} of {attempted} examples in {name} fail"
