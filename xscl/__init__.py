"""xscl: continuous XML/RSS join queries (XSCL) over streams, on Apache Spark.

The import root. Subpackages follow the data flow (see docs/architecture.md):
``lang`` (XSCL parsing, AST, normal form, errors), ``reference`` (the brute-force
oracle), ``connectors`` (feeds, files, durable spool), ``xpath`` (Stage 1: shared
XPath evaluation into witness tuples), ``templates`` (join graphs, graph minors,
query templates and the shared join processor).
"""

__version__ = "0.1.0"
