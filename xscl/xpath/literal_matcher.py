"""Which of many literals occur in a string: one Aho-Corasick pass (pyahocorasick).

*Decision* (docs/architecture.md, Stage 1): pyahocorasick, chosen by
instruction counts (callgrind) against ahocorasick-rs, google-re2's
``Set``, Hyperscan and a pure-Python trigram table, on the real feeds'
titles and bodies with 10k and 97k literals from their vocabulary.

>>> matcher = LiteralMatcher(["rust", "go", "kotlin"])
>>> sorted(matcher.found("learning rust and go\\x00kotlin"))
[0, 1, 2]
>>> sorted(LiteralMatcher([]).found("anything"))
[]
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import ahocorasick


class LiteralMatcher:
    """The literals (given in order, distinct, non-empty) found in a haystack, by index."""

    __slots__ = ("_automaton",)

    def __init__(self, literals: Sequence[str]) -> None:
        automaton = ahocorasick.Automaton()
        for index, literal in enumerate(literals):
            automaton.add_word(literal, index)
        if literals:
            automaton.make_automaton()
            self._automaton: ahocorasick.Automaton | None = automaton
        else:
            self._automaton = None

    def found(self, haystack: str) -> Iterable[int]:
        """Indices of the literals that occur in ``haystack`` (repeats possible)."""
        automaton = self._automaton
        if automaton is None or not haystack:
            return ()
        return [index for _, index in automaton.iter(haystack)]
