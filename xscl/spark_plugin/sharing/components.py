"""Connected components of a graph held as a Spark DataFrame: one protocol, two implementations.

``Components.label(edges)`` takes the edges (``src``, ``dst``: LONG vertex ids,
undirected) and labels every vertex that is on an edge with its component
(``id``, ``component``: LONG; two vertices share a label iff they are connected).

* ``graphframes_cc.GraphFramesComponents``: GraphFrames' ``connectedComponents``
  (its Scala jar, on the executors' JVMs);
* ``star.DataFrameComponents``: the same algorithm (large-star / small-star) in
  DataFrame operations, for where the jar is absent (it comes only from Maven).

``components_for(spark)`` picks GraphFrames when its Python module imports and the
session's JVM can load ``org.graphframes.GraphFrame`` (``graphframes_loadable``:
the detection seam), else the DataFrames; the chosen one says its ``name``.

Where it runs: the driver plans, once per command; the joins and aggregations of
either implementation run on the executors. Nothing here is pickled.
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

__all__ = [
    "GRAPHFRAME_CLASS",
    "ComponentLabels",
    "Components",
    "components_for",
    "graphframes_loadable",
    "vertices_of",
]

#: The class whose presence in the JVM says the GraphFrames jar is loaded.
GRAPHFRAME_CLASS = "org.graphframes.GraphFrame"


@dataclass(frozen=True)
class ComponentLabels:
    """Each vertex's component (``id``, ``component``) and the rounds it took (None:
    the implementation does not say)."""

    labels: DataFrame
    rounds: int | None


class Components(Protocol):
    """Labels the connected components of an edge DataFrame (module docstring)."""

    @property
    def name(self) -> str: ...

    def label(self, edges: DataFrame) -> ComponentLabels: ...


def vertices_of(edges: DataFrame) -> DataFrame:
    """The vertices on ``edges`` (``id``), each once."""
    from pyspark.sql import functions as F

    ends = edges.select(F.col("src").alias("id")).union(edges.select(F.col("dst").alias("id")))
    return ends.distinct()


def graphframes_loadable(spark: SparkSession) -> bool:
    """Whether GraphFrames can run here: its Python module is installed and the session's
    JVM loads ``GRAPHFRAME_CLASS`` (through the context class loader, as GraphFrames'
    own Python API does). No traceback when it cannot."""
    if importlib.util.find_spec("graphframes") is None:
        return False
    from py4j.protocol import Py4JError

    jvm = spark.sparkContext._jvm
    if jvm is None:
        return False
    try:
        jvm.Thread.currentThread().getContextClassLoader().loadClass(GRAPHFRAME_CLASS)
    except Py4JError:  # ClassNotFoundException, as a Py4JJavaError
        return False
    return True


def components_for(spark: SparkSession) -> Components:
    """GraphFrames' components when its jar is loaded, else the DataFrame ones."""
    if graphframes_loadable(spark):
        from xscl.spark_plugin.sharing.graphframes_cc import GraphFramesComponents

        return GraphFramesComponents()
    from xscl.spark_plugin.sharing.star import DataFrameComponents

    return DataFrameComponents()
