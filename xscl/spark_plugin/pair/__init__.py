"""The Spark side of process pairs (the protocol itself is ``xscl.service.pair``).

* ``warm``: a standby keeps its Spark session and Python workers warm;
* ``metrics``: ``xscl status``'s figures as gauges of Spark's metrics system.
"""
