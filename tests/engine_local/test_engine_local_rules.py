"""The local engine on the join rules pinned by hand (``tests/rules.py``), exactly.

Each rule runs in its arrival order and reversed: results depend on timestamps,
not on arrival (spec 3.3).
"""

from __future__ import annotations

import pytest

from tests.rules import RULES, Rule, check_rule
from xscl.engine import LocalEngine
from xscl.lang.parser import parse_queries


@pytest.mark.parametrize("rule", RULES, ids=repr)
@pytest.mark.parametrize("order", ["arrival", "reversed"])
def test_the_local_engine_follows_the_rule(rule: Rule, order: str) -> None:
    docs = rule.docs if order == "arrival" else tuple(reversed(rule.docs))
    engine = LocalEngine(parse_queries(rule.queries))
    check_rule(rule, [r.to_json_dict() for r in engine.process(docs)])
