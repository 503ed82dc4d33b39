"""The streaming job's Spark side: thin adapters over ``xscl.engine`` and ``xscl.results``.

One module per step of the plan: ``routed_source`` (the spool read and routed in its
tasks: ``engine.routing``), ``join_groups`` (the stateful join groups:
``engine.groups``), ``sink`` (dead letters, Atom feeds, the driver's commit),
``plan`` (the one Spark plan, built on the driver); ``shape`` and ``placement`` (how
the state is partitioned), ``hot_values`` (the values spread over salts).
"""
