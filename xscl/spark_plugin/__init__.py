"""xscl on Apache Spark: session, data sources (``xscl-spool``, ``xscl-results``), sinks.

Import the submodules directly; importing this package does not import pyspark.
"""
