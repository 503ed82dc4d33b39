"""Sharing groups: the subscriptions that share state, as connected components.

Two live queries are in one sharing group when they share a template (one R_T
table, one conjunctive query), a Stage-1 definition (stored witness rows, one
XPath evaluation) or a PUBLISHed stream (one publishes what the other reads):
the groups are the connected components of the bipartite graph between queries
and those keys (``keys``). ``xscl explain --sharing`` prints them.

* ``keys``: what a query shares, and the union-find oracle (pure Python, in process);
* ``summary``: what is printed about the groups (driver);
* ``components``: the protocol that labels a graph's components on Spark, and the
  choice of implementation (GraphFrames when its jar is loaded, else DataFrames);
* ``star``: the DataFrame implementation (large-star / small-star);
* ``graphframes_cc``: the GraphFrames implementation;
* ``registry``: the graph of a job's registry read from its compiled table, on Spark.
"""
