"""The streaming job's entry point for ``spark-submit`` (``xscl serve`` on a cluster).

    spark-submit --master local[2] xscl/spark_plugin/submit.py \\
        --queries queries.xscl --spool xscl-data/spool --home xscl-data [--once]

The options are ``xscl serve``'s (``xscl.cli.serve``, which checks them and runs
``spark_plugin.serve``). Ship the package installed or on ``PYTHONPATH`` on every
node: ``--py-files`` does not reach the Python process that plans the ``xscl-spool``
source (a worker the driver JVM starts with its own path).
"""

from __future__ import annotations

import sys

from xscl.cli.serve import main

if __name__ == "__main__":
    sys.exit(main())
