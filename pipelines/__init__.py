"""Sluice data plane: from a channel spec to a Spark Structured Streaming query.

* ``pipelines.spec`` - channel spec, plugin catalogue, event patterns (pure Python; the
  console imports it and it must never import pyspark).
* ``pipelines.cloudevents`` - the CloudEvents record every stage works on.
* ``pipelines.timestamps`` - the one RFC 3339 parser (pure Python, like ``pipelines.spec``).
* ``pipelines.sources`` / ``transforms`` / ``sinks`` - Spark implementations per plugin type.
* ``pipelines.patterns`` - event patterns compiled to native Spark predicates.
* ``pipelines.query`` - the query plumbing every channel builds on (its events, sink batch
  writers, triggers); ``pipelines.stage_metrics`` - the events counted per stage.
* ``pipelines.bus`` - a channel with rules: one query routing each batch to every rule.
* ``pipelines.builder`` - ``build_stream``: spec -> configured ``DataStreamWriter`` (a bus's
  from ``pipelines.bus``).

This package imports neither the console, the runtime adapter, Django, Redis nor Celery.
Importing ``pipelines`` itself loads nothing else.
"""
