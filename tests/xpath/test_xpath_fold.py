"""The presearch fold keeps every literal the verifier could accept (xscl.xpath.fold).

Checked over every assigned code point: folding a character gives the same
as folding what elementpath's ``lower-case``/``upper-case`` (Python's
``str.lower``/``upper``) make of it, and characters Python's ``re`` matches
under ``IGNORECASE`` (elementpath's ``i`` flag: simple lowercase plus
``re``'s extra equivalences) fold alike.  With ``fold`` a homomorphism, a
literal found by the verifier in a transformed value is found by the index
in the folded value.
"""

from __future__ import annotations

import _sre
import sys
import unicodedata

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.profiles import examples
from xscl.xpath.fold import fold

try:  # Python >= 3.11
    from re._casefix import _EXTRA_CASES as EXTRA_CASES
except ImportError:  # pragma: no cover - Python 3.10 keeps them in sre_compile
    from sre_compile import _ignorecase_fixes as EXTRA_CASES  # type: ignore[attr-defined,no-redef]


def _assigned() -> list[str]:
    return [
        chr(cp)
        for cp in range(sys.maxunicode + 1)
        if unicodedata.category(chr(cp)) not in ("Cn", "Cs")
    ]


def test_case_rules_of_the_verifier_fold_alike_for_every_character() -> None:
    def same(c: str) -> bool:
        simple_lower = chr(_sre.unicode_tolower(ord(c)))
        return fold(c.lower()) == fold(c) == fold(c.upper()) == fold(simple_lower)

    bad = [c for c in _assigned() if not same(c)]
    assert bad == []


def test_re_ignorecase_equivalences_fold_alike() -> None:
    for code, others in EXTRA_CASES.items():
        for other in others:
            assert fold(chr(code)) == fold(chr(other)), (chr(code), chr(other))
    assert fold("ς") == fold("σ") == fold("Σ")  # str.lower's final sigma


@examples(200)
@given(st.text(), st.text())
def test_fold_is_a_homomorphism(a: str, b: str) -> None:
    assert fold(a + b) == fold(a) + fold(b)


@pytest.mark.parametrize(
    ("value", "literal"),
    [("Straße", "STRASSE"), ("İstanbul", "i̇stanbul"), ("a \t\n b", "a b"), ("ΟΔΟΣ", "οδος")],
)
def test_transformed_matches_are_found_folded(value: str, literal: str) -> None:
    transformed = {value.lower(), value.upper(), " ".join(value.split())}
    assert any(literal in t for t in transformed)
    assert fold(literal) in fold(value)
