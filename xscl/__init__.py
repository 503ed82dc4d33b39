"""xscl: continuous XML/RSS join queries (XSCL) over streams, on Apache Spark.

The import root. Subpackages follow the data flow (see docs/architecture.md):
``connectors`` (feeds, files, the durable spool), ``lang`` (XSCL parsing, AST,
normal form, validation), ``xpath`` (Stage 1: shared XPath evaluation into witness
rows), ``templates`` (join graphs, graph minors, query templates), ``engine`` (the
shared join processor in one process), ``spark_plugin`` (the streaming job),
``reference`` (the brute-force oracle) and ``cli``. Every error is an
``xscl.XsclError`` with a stable code (``xscl.errors``, docs/errors.md).
"""

from xscl.errors import XsclError

__version__ = "0.1.0"
__all__ = ["XsclError", "__version__"]
