"""The thesis's Example 5 (4.2, 3.2.4) with its duration as the thesis writes it, ``52 weeks``."""

from __future__ import annotations

import json

import pytest

from xscl.events.engine import Engine
from xscl.events.envelope import parse_event
from xscl.events.reference import evaluate
from xscl.lang.cel.parser import parse_file
from xscl.lang.cel.validation import Program, validate

DAY = 86_400

# Forward the IBM quotes above the 52-week average: sigma_{DUR = 52 weeks} of the running
# average (FOLD over IBM quotes), then the next IBM quote, kept when above that average.
EXAMPLE_5 = """DECLARE STREAM Stock(Name, Price, Volume);
ex5: SELECT Name, Price, avg_1 AS avg
  FROM FILTER{Price > avg_1}(
    (SELECT Name, avg FROM FILTER{DUR = %s}(
      (SELECT *, Price AS avg, 1 AS n FROM FILTER{Name = 'IBM'}(Stock))
        FOLD{$2.Name = 'IBM', TRUE, ($.avg * $.n + $2.Price) / ($.n + 1) AS avg, $.n + 1 AS n}
      Stock))
    NEXT{$2.Name = 'IBM'} Stock)
"""

T0 = 1_000 * DAY
QUOTES = [  # (day, name, price)
    (0, "IBM", 10),
    (182, "IBM", 20),
    (364, "IBM", 30),  # 52 weeks after the first: average 20 over the three
    (365, "MSFT", 99),  # not IBM: skipped by NEXT
    (366, "IBM", 25),  # the next IBM quote, above 20
    (367, "IBM", 12),
]
EVENTS = [
    parse_event(json.dumps({"stream": "Stock", "end": T0 + day * DAY, "attrs": attrs}))
    for day, name, price in QUOTES
    for attrs in [{"Name": name, "Price": price, "Volume": 1}]
]


def _program(duration: str) -> Program:
    text = EXAMPLE_5 % duration
    parsed = parse_file(text)
    program, errors = validate(parsed, text=text)
    assert parsed.ok and not errors, [str(e) for e in (*parsed.errors, *errors)]
    return program


@pytest.mark.parametrize("duration", ["52 weeks", "52 Weeks", "364 days", "8736 HOURS"])
def test_example_5_in_weeks_evaluates_like_days(duration: str) -> None:
    engine = Engine()
    engine.subscribe(_program(duration))
    results = engine.run(EVENTS)
    assert results == evaluate(_program(duration), EVENTS) == evaluate(_program("364 days"), EVENTS)
    # hand check: the run 0 -> 364 spans 52 weeks with average (10 + 20 + 30) / 3 = 20;
    # the next IBM quote (day 366) is 25 > 20; no other run spans exactly 52 weeks
    assert [(r.start, r.end, r.attrs) for r in results] == [
        (T0 * 10**6, (T0 + 366 * DAY) * 10**6, (("Name", "IBM"), ("Price", 25), ("avg", 20)))
    ]
    assert evaluate(_program("51 weeks"), EVENTS) == set()
