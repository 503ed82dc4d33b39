"""Sharing groups without Spark: what a query shares, and the printed summary.

Two live queries are in one sharing group when they share a template (one R_T
table, one conjunctive query), a Stage-1 definition (stored witness rows, one
XPath evaluation) or a PUBLISHed stream (one publishes what the other reads):
the groups are the connected components of the bipartite graph between queries
and those keys.

* ``keys``: what a query shares, and the union-find oracle (pure Python, in process);
* ``summary``: what is printed about the groups.

On a job's registry the components are found on Spark (``xscl.spark_plugin.sharing``).
"""
