"""The reference evaluator on the hand-checked fixtures (thesis examples, each decision)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cel.fixtures_eval import FIXTURES, load
from xscl.events.reference import evaluate


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: p.stem)
def test_reference_gives_the_fixture_results(path: Path) -> None:
    fixture = load(path)
    assert fixture.about.strip(), "a fixture says what it tests"
    got = evaluate(fixture.program, fixture.events)
    assert got == fixture.expected, (
        sorted(r.to_json() for r in got - fixture.expected),
        sorted(r.to_json() for r in fixture.expected - got),
    )
