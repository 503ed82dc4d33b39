"""Compiled subscriptions: what registering a query needs, computed once and kept as data.

* ``values``: one value (AST, normal form, template) as JSON text, and back;
* ``table``: the compiled table, one Parquet folder per subscribe event;
* ``sources``: a worker's two ways to get an event's compiled queries (texts, table).

The Spark job that compiles the registry's texts on the executors is
``xscl.spark_plugin.compile_job``.
"""
