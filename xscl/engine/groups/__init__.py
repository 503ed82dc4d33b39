"""Stage 2 partitioned: the join groups' logic, pure and the same wherever it runs.

The Spark job keeps the join state in Spark's state store, partitioned by *group*
(a bucket of string values, or the one chain group). Each group's logic is a pure
step in the manner of Bytewax's ``StatefulLogic``: its snapshot in, the batch's
routed documents in, result records out, then its new snapshot (``GroupLogic``).
The Spark adapter (``xscl.spark_plugin.job.join_groups``) only turns Spark's rows
and state into these arguments and writes what comes out; tests run the same logic
in process.

* ``routed``: what a group receives (``RoutedDoc``), the protocol, the group keys;
* ``codec``: a document and its witness rows as bytes (value groups keep digests);
* ``stored``: a group's stored documents and their snapshot;
* ``exact``: a match found on digests checked, and its documents completed, on the
  real strings read back from the spool;
* ``value_group``: two-block value joins owned by the owner edge's value;
* ``chain_group``: everything that needs all documents of its streams in one place.

Where the documents come from is ``xscl.engine.routing`` (in the source's tasks).
"""
