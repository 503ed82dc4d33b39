"""The streaming job on the executors: Stage 1, routing, join groups, sinks (docs/architecture.md).

One module per step of the flow: ``queries`` (the subscriptions of a registry
version, per worker), ``route_task`` (Stage 1, lateness, routing), ``codec``
(stored documents as bytes), ``groups`` (the stateful join groups), ``sink``
(results, dead letters and Atom feeds written by tasks), ``plan`` (the one Spark
plan, built on the driver).
"""
