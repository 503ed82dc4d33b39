"""Sharing groups of a job's registry, found on Spark (``xscl explain --sharing --home``).

What a query shares and the summary are ``xscl.service.sharing``; here:

* ``components``: the protocol that labels a graph's components on Spark, and the
  choice of implementation (GraphFrames when its jar is loaded, else DataFrames);
* ``star``: the DataFrame implementation (large-star / small-star);
* ``graphframes_cc``: the GraphFrames implementation;
* ``registry``: the graph of a job's registry read from its compiled table, on Spark.
"""
