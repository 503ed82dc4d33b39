"""Register the xscl Spark data sources on a session (driver, once per session)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


def register_data_sources(spark: SparkSession) -> None:
    """Make ``format("xscl-spool")``, ``format("xscl-results")`` and the streaming job's
    own source and sink, ``format("xscl-routed")`` and ``format("xscl-job-output")``,
    available, and the CEL job's source ``format("xscl-cel-events")`` (idempotent)."""
    from xscl.spark_plugin.cel.source import CelEventsDataSource
    from xscl.spark_plugin.job.routed_source import RoutedDataSource
    from xscl.spark_plugin.job.sink import JobOutputDataSource
    from xscl.spark_plugin.results_sink import ResultsDataSource
    from xscl.spark_plugin.spool_source import SpoolDataSource

    spark.dataSource.register(SpoolDataSource)
    spark.dataSource.register(ResultsDataSource)
    spark.dataSource.register(JobOutputDataSource)
    spark.dataSource.register(RoutedDataSource)
    spark.dataSource.register(CelEventsDataSource)
