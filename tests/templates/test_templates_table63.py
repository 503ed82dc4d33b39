"""Thesis Table 6.3 counted from the real pipeline, and the CLI that prints it.

How the count is made (``xscl.templates.enumeration``): every two-block query
over the schema whose K value joins connect leaf variables of the two sides
(a variable may take part in several joins, each variable in at least one),
placed on schema leaves up to the schema's symmetry, goes through join graph ->
graph minor -> canonical form. On the flat schema a template is then exactly a
bipartite graph with K edges and no isolated vertex, sides kept apart: 1, 3, 6
and 16 for K = 1..4 (for K = 3: three disjoint edges; a path of three edges;
a 3-star centred left or right; a 2-star centred left or right plus an edge).
The thesis's table prints 6 for flat K = 3, and its Figure 6.6 shows the 16
templates of K = 3 on the complex schema, the first 6 being the flat ones.
On the complex schema K = 4 gives 146: below the spec's bound of 230, and pinned as
this enumeration's own count (not checked by hand).
"""

from __future__ import annotations

import pytest

from xscl.cli.templates_cmd import register
from xscl.templates.enumeration import count_templates


@pytest.mark.parametrize(("joins", "expected"), [(1, 1), (2, 3), (3, 6), (4, 16)])
def test_flat_schema_counts(joins: int, expected: int) -> None:
    assert count_templates("flat", joins) == expected


@pytest.mark.parametrize(("joins", "expected"), [(1, 1), (2, 3), (3, 16)])
def test_complex_schema_counts(joins: int, expected: int) -> None:
    assert count_templates("complex", joins) == expected


def test_complex_schema_four_joins_is_below_the_spec_bound_and_pinned_at_146() -> None:
    """The spec asks only for fewer than 230 templates (thesis Table 6.3 prints no exact
    count for K = 4). 146 is this enumeration's own count, not checked by hand: it is
    pinned so that a change to the canonical form or the enumeration that moves it is
    seen and has to be explained, not because 146 is known to be right."""
    count = count_templates("complex", 4)
    assert count < 230  # the spec's requirement
    assert count == 146  # regression pin (see the docstring)


def test_cli_prints_the_count_alone_on_the_last_line(capsys: pytest.CaptureFixture[str]) -> None:
    import argparse

    parser = argparse.ArgumentParser()
    register(parser.add_subparsers())
    args = parser.parse_args(
        ["templates", "enumerate", "--schema", "flat", "--value-joins", "3", "--show"]
    )
    assert args.func(args) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines[-1] == "6"
    assert sum(1 for line in lines if line.startswith("T")) == 6
