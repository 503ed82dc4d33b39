"""Suite-wide: the Hypothesis profiles (``tests/profiles.py``; ``ci`` unless
``--hypothesis-profile`` names another)."""

from tests.profiles import register

register()
