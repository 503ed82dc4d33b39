"""``python -m xscl`` runs the command line."""

import sys

from xscl.cli.main import main

sys.exit(main())
