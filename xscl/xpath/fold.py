"""The presearch fold: one string form in which every function predicate's literals are found.

The presearch index (:mod:`xscl.xpath.presearch`) looks for a predicate's
necessary literals in the values a document offers.  The verifier
(elementpath) compares code points exactly, but a predicate may first apply
``lower-case``, ``upper-case`` or ``normalize-space`` to the value, or match a
regex with the ``i`` flag.  So both the literals and the values are folded
with one function ``fold`` that

* maps each character on its own (a homomorphism: ``fold(a + b) ==
  fold(a) + fold(b)``), so ``s in t`` implies ``fold(s) in fold(t)``;
* erases case the way all three case rules of the verifier see it:
  ``fold(c.lower()) == fold(c) == fold(c.upper())`` for every character
  (Python's ``str.lower``/``upper``, which elementpath's ``lower-case`` and
  ``upper-case`` call, final sigma included), and two characters that
  Python's ``re`` matches under ``IGNORECASE`` (elementpath's ``i`` flag) fold
  alike (``tests/xpath/test_xpath_fold.py`` checks all three over every
  assigned code point);
* deletes the four XML whitespace characters, so
  ``fold(normalize-space(x)) == fold(x)``.

It is Unicode full case folding (``str.casefold``) plus three repairs the
exhaustive check found: dotless ``ı`` folds to ``i`` (``re`` matches them
under ``IGNORECASE``; ``'ı'.upper()`` is ``I``), and U+0307 COMBINING DOT
ABOVE is deleted (``'İ'.lower()`` is ``i`` + U+0307 while ``re`` matches ``İ``
with a plain ``i``).  Folding only ever makes more literals match, so the
index stays a superset of what the verifier accepts; NFC is not applied
(spec sections 1 and 3.1: the verifier sees the document's text as written).

>>> fold("Rust  Weekly")
'rustweekly'
>>> fold("İstanbul ΣΑΣ"), fold("ıstanbul σας")
('istanbulσασ', 'istanbulσασ')
"""

from __future__ import annotations

_WHITESPACE = (" ", "\t", "\r", "\n")


def fold(text: str) -> str:
    """``text`` folded for the presearch (see the module docstring)."""
    if text.isascii():
        folded = text.lower()
    else:
        folded = text.casefold()
        if "ı" in folded:
            folded = folded.replace("ı", "i")
        if "\u0307" in folded:
            folded = folded.replace("\u0307", "")
    for space in _WHITESPACE:
        if space in folded:
            folded = folded.replace(space, "")
    return folded
