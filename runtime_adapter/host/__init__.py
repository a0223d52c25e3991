"""The host side of the Spark runtime: what runs on a runtime host, never in the console.

The runtime worker (``python -m runtime_adapter.host.worker``), the driver entry point
``spark-submit`` runs (:mod:`runtime_adapter.host.driver`), the connectors a driver hosts and
what they report. It imports PySpark; the client side of :mod:`runtime_adapter` (the protocol,
the Redis store, the Kafka helpers, checkpoints, the adapter the console calls) never imports
it (an import-linter contract in ``pyproject.toml``).
"""
