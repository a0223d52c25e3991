"""HTTP source: the events the console accepted over HTTP, read back from the ingest topic.

The console validates every posted event and writes it, as a structured-mode CloudEvent
keyed by its id, to the channel's ingest topic (``ingest_topic`` on ``bootstrap_servers``,
filled in by Sluice at deploy time). This source reads that topic from the earliest offset,
so events accepted before the channel's first start are not lost, and converts the records
exactly as the Kafka source does with ``format: cloudevents``.
"""

from __future__ import annotations

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from pipelines.sources.kafka import read_kafka, structured_records_to_events
from pipelines.spec.configs import KafkaSourceConfig
from pipelines.spec.configs.http import HttpSourceConfig


def ingest_kafka_config(config: HttpSourceConfig) -> KafkaSourceConfig:
    """The Kafka source config that reads the HTTP source's ingest topic.

    Raises ``ValueError`` when the physical fields were not filled in (the channel was not
    deployed by Sluice).
    """
    if not config.ingest_topic or not config.bootstrap_servers:
        raise ValueError(
            "the http source has no ingest_topic / bootstrap_servers: Sluice sets them when it "
            "starts the channel"
        )
    return KafkaSourceConfig.model_validate(
        {
            "bootstrap_servers": config.bootstrap_servers,
            "topics": [config.ingest_topic],
            "starting_offsets": "earliest",
            "format": "cloudevents",
        }
    )


def read_http(
    spark: SparkSession, config: HttpSourceConfig, *, real_time: bool = False
) -> DataFrame:
    """Streaming DataFrame of the raw records of the ingest topic (see
    :func:`pipelines.sources.kafka.read_kafka`)."""
    return read_kafka(spark, ingest_kafka_config(config), real_time=real_time)


def http_records_to_events(records: DataFrame, config: HttpSourceConfig) -> DataFrame:
    """Turn ingest-topic records (structured CloudEvents) into events; their keys are the
    console's (each event's id), not a partition key of the user's."""
    return structured_records_to_events(records.filter(F.col("value").isNotNull()), keep_key=False)
