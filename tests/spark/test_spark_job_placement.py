"""``job.placement`` predicts the state partition Spark gives a group key, exactly."""

from __future__ import annotations

from typing import Any

import pytest

from xscl.spark_plugin.job.placement import group_keys, partition_of

pytestmark = pytest.mark.spark


@pytest.mark.parametrize("partitions", [2, 7])
def test_partition_of_is_sparks_hash_partitioning(spark: Any, partitions: int) -> None:
    spark.conf.set("spark.sql.adaptive.enabled", "false")  # as in a streaming query
    try:
        rows = (
            spark.range(-300, 300)
            .selectExpr("CAST(id AS INT) AS g")
            .repartition(partitions, "g")
            .selectExpr("g", "spark_partition_id() AS p")
            .collect()
        )
    finally:
        spark.conf.unset("spark.sql.adaptive.enabled")
    assert len(rows) == 600
    assert all(r.p == partition_of(r.g, partitions) for r in rows)


def test_group_keys_give_every_partition_the_same_number_of_buckets() -> None:
    for buckets, partitions in ((16, 4), (256, 8), (10, 3)):
        keys = group_keys(buckets, partitions)
        assert len(set(keys)) == buckets
        counts = [0] * partitions
        for key in keys:
            counts[partition_of(key, partitions)] += 1
        assert max(counts) - min(counts) <= 1, (buckets, partitions, counts)
