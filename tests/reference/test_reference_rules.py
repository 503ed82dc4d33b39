"""The reference evaluator on the join rules pinned by hand (``tests/rules.py``), exactly."""

from __future__ import annotations

import pytest

from tests.rules import RULES, Rule, check_rule
from tests.workloads import reference_records


@pytest.mark.parametrize("rule", RULES, ids=repr)
def test_the_reference_follows_the_rule(rule: Rule) -> None:
    check_rule(rule, reference_records(rule.queries, rule.docs))
