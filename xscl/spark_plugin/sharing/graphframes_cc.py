"""Connected components by GraphFrames, where its jar is loaded (``components.components_for``).

GraphFrames' default algorithm is the large-star / small-star of ``star``, run by
its Scala code; local checkpoints cut the lineage between its rounds as ``star``'s
do, so no checkpoint directory is needed. It does not report its rounds.

Its jar is not obtainable without Maven: this path is chosen only when the
session's JVM loads ``org.graphframes.GraphFrame``, and is tested here with a
stand-in for the ``graphframes`` module, not the real jar.

Where it runs: ``label`` on the driver, once per command; GraphFrames' jobs on the
executors. Nothing is pickled.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from xscl.spark_plugin.sharing.components import ComponentLabels, vertices_of

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

__all__ = ["GraphFramesComponents"]


class GraphFramesComponents:
    """GraphFrames' ``connectedComponents`` over the edges (module docstring)."""

    name = "GraphFramesComponents (GraphFrames' connectedComponents)"

    def label(self, edges: DataFrame) -> ComponentLabels:
        from graphframes import GraphFrame

        vertices = vertices_of(edges)
        found = GraphFrame(vertices, edges.select("src", "dst")).connectedComponents(
            use_local_checkpoints=True
        )
        return ComponentLabels(found.select("id", "component"), None)
