"""The built-in functions of CEL's expressions: their names and signatures (docs/cel.md 3.2).

Only the signatures live here (the validator checks calls against them); the
reference evaluator and the engine each implement the functions from the doc.
The thesis's RSS subscriptions (Table 3.2, Examples 6 and 7) need ``contains``.

>>> FUNCTIONS["contains"]
Signature(params=('text', 'part'), returns='cond')
"""

from __future__ import annotations

from typing import Literal, NamedTuple

__all__ = ["FUNCTIONS", "Signature"]


class Signature(NamedTuple):
    """Parameter names (all values) and whether the call is a condition or a value."""

    params: tuple[str, ...]
    returns: Literal["cond", "value"]

    @property
    def arity(self) -> int:
        """How many arguments a call takes."""
        return len(self.params)


FUNCTIONS: dict[str, Signature] = {
    "contains": Signature(("text", "part"), "cond"),
    "starts_with": Signature(("text", "prefix"), "cond"),
    "ends_with": Signature(("text", "suffix"), "cond"),
    "lower": Signature(("text",), "value"),
    "upper": Signature(("text",), "value"),
    "abs": Signature(("number",), "value"),
}
