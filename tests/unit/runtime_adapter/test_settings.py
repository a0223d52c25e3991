"""RuntimeSettings: the runtime's environment, read one way (pydantic-settings), and the
RuntimeConfig a worker is handed from it."""

from __future__ import annotations

import os
import socket
import sys
from pathlib import Path

import pytest

from runtime_adapter.config import (
    FUNCTIONS_JARS_DIR,
    REPO_ROOT,
    SPARK_KAFKA_JARS_DIR,
    RuntimeConfig,
    RuntimeSettings,
    SettingsError,
    environment_names,
)
from runtime_adapter.kafka import TopicReplication
from tests.support.settings_env import settings_env


def variables(settings_class: type[RuntimeSettings]) -> list[str]:
    return [
        v for name in settings_class.model_fields for v in environment_names(settings_class, name)
    ]


@pytest.fixture
def env(monkeypatch: pytest.MonkeyPatch):
    """No runtime variable set; call ``env(NAME=value, …)`` to set some."""
    return settings_env(monkeypatch, RuntimeSettings)


def test_defaults(env):
    settings = RuntimeSettings.load()

    assert settings.redis_url == "redis://127.0.0.1:6379/0"
    assert settings.redis_prefix == "sluice"
    assert settings.var_dir == REPO_ROOT / "var"
    assert settings.resolved_checkpoint_root() == REPO_ROOT / "var" / "checkpoints"
    assert settings.spark_master == "local[*]"
    assert (settings.spark_jars_dir, settings.spark_functions_dir) == (
        SPARK_KAFKA_JARS_DIR,
        FUNCTIONS_JARS_DIR,
    )
    assert (settings.executor_cores, settings.max_cores, settings.warm_drivers) == (1, None, 1)
    assert (settings.channels_per_driver, settings.idle_poll_ms) == (50, 500)
    assert (settings.driver_memory, settings.shared_driver_memory) == ("1g", "2g")
    assert settings.driver_stop_grace == 20.0
    assert settings.stage_counts is True
    assert (settings.log_level, settings.log_format, settings.spark_log_level) == (
        "INFO",
        "text",
        "WARN",
    )


def test_the_config_a_worker_is_handed_resolves_what_is_unset(env):
    config = RuntimeConfig.from_env()

    assert config.worker_id == socket.gethostname()
    assert config.python == sys.executable
    assert config.max_cores == config.executor_cores == 1
    assert config.worker_cores == (os.cpu_count() or 1)
    assert config.checkpoint_root == config.var_dir / "checkpoints"
    assert (config.heartbeat_interval, config.driver_start_timeout) == (1.0, 180.0)
    assert config.key_prefix == "sluice"


def test_every_kind_of_value_comes_from_the_environment(env, tmp_path: Path):
    env(
        REDIS_URL="redis://cache:6379/1",  # a variable without the prefix
        SLUICE_REDIS_PREFIX="blue",  # text
        SLUICE_VAR_DIR=str(tmp_path),  # a path
        SLUICE_EXECUTOR_CORES="4",  # a whole number
        SLUICE_WARM_DRIVERS="0",  # a count, 0 allowed
        SLUICE_DRIVER_IDLE_SECONDS="2.5",  # a number
        SLUICE_STAGE_COUNTS="off",  # true or false
        SLUICE_LOG_FORMAT=" JSON ",  # one of a few words, any case
        SLUICE_LOG_LEVEL="debug",
        SLUICE_DRIVER_HOST="10.0.0.5",  # optional text
        SPARK_MASTER="spark://m1:7077,m2:7077",
        PYSPARK_PYTHON="/usr/bin/python3",
        SLUICE_WORKER_ID="w7",
    )
    settings = RuntimeSettings.load()
    config = RuntimeConfig.from_env()

    assert settings.redis_url == config.redis_url == "redis://cache:6379/1"
    assert config.key_prefix == "blue"
    assert config.var_dir == tmp_path
    assert config.checkpoint_root == tmp_path / "checkpoints"
    assert config.executor_cores == config.max_cores == 4
    assert config.warm_drivers == 0
    assert config.driver_idle_seconds == 2.5
    assert settings.stage_counts is False
    assert (settings.log_format, settings.log_level) == ("json", "DEBUG")
    assert config.driver_host == "10.0.0.5"
    assert config.master_addresses() == [("m1", 7077), ("m2", 7077)]
    assert (config.python, config.worker_id) == ("/usr/bin/python3", "w7")


@pytest.mark.parametrize("value", ["1", "true", "yes", "on", "TRUE"])
def test_true(env, value):
    env(SLUICE_STAGE_COUNTS=value)
    assert RuntimeSettings.load().stage_counts is True


@pytest.mark.parametrize("value", ["0", "false", "no", "off", "False"])
def test_false(env, value):
    env(SLUICE_STAGE_COUNTS=value)
    assert RuntimeSettings.load().stage_counts is False


def test_an_empty_or_blank_variable_is_as_if_unset(env):
    env(REDIS_URL="", SLUICE_EXECUTOR_CORES="  ", SLUICE_CHECKPOINT_ROOT="", SLUICE_WORKER_ID=" ")
    config = RuntimeConfig.from_env()

    assert config.redis_url == "redis://127.0.0.1:6379/0"
    assert config.executor_cores == 1
    assert config.checkpoint_root == config.var_dir / "checkpoints"
    assert config.worker_id == socket.gethostname()


def test_max_cores_and_checkpoints_can_be_set_apart(env, tmp_path):
    env(SLUICE_EXECUTOR_CORES="2", SLUICE_MAX_CORES="6", SLUICE_CHECKPOINT_ROOT=str(tmp_path))
    config = RuntimeConfig.from_env()

    assert (config.executor_cores, config.max_cores) == (2, 6)
    assert config.checkpoint_root == tmp_path


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        ("SLUICE_EXECUTOR_CORES", "two", "SLUICE_EXECUTOR_CORES must be a whole number, got 'two'"),
        (
            "SLUICE_CHANNELS_PER_DRIVER",
            "0",
            "SLUICE_CHANNELS_PER_DRIVER must be at least 1, got '0'",
        ),
        ("SLUICE_WARM_DRIVERS", "-1", "SLUICE_WARM_DRIVERS must be at least 0, got '-1'"),
        (
            "SLUICE_DRIVER_STOP_GRACE",
            "soon",
            "SLUICE_DRIVER_STOP_GRACE must be a number, got 'soon'",
        ),
        ("SLUICE_STAGE_COUNTS", "maybe", "SLUICE_STAGE_COUNTS must be true or false, got 'maybe'"),
        ("SLUICE_LOG_FORMAT", "xml", "SLUICE_LOG_FORMAT must be 'text' or 'json', got 'xml'"),
        ("SPARK_MASTER", "", None),  # empty: the default, no error
    ],
)
def test_a_bad_value_is_refused_with_its_variable_named(env, name, value, message):
    env(**{name: value})
    if message is None:
        RuntimeSettings.load()
        return
    with pytest.raises(SettingsError) as refused:
        RuntimeSettings.load()
    assert str(refused.value) == message


def test_every_bad_value_is_named_at_once(env):
    env(SLUICE_EXECUTOR_CORES="x", SLUICE_LOG_LEVEL="loud")
    with pytest.raises(SettingsError) as refused:
        RuntimeConfig.from_env()

    lines = str(refused.value).splitlines()
    assert [line.split()[0] for line in lines] == ["SLUICE_EXECUTOR_CORES", "SLUICE_LOG_LEVEL"]
    assert "must be 'CRITICAL'" in lines[1]


def test_every_setting_has_a_description_and_its_own_variable():
    names = variables(RuntimeSettings)
    assert len(names) == len(set(names))
    for name, field in RuntimeSettings.model_fields.items():
        assert field.description, name


def test_settings_are_read_only(env):
    settings = RuntimeSettings.load()
    with pytest.raises(ValueError):
        settings.redis_url = "redis://elsewhere"  # type: ignore[misc]


def test_topics_are_replicated_once_by_default_and_as_set_on_a_cluster(env):
    default = RuntimeConfig.from_env()
    assert (default.topic_replication_factor, default.topic_min_insync_replicas) == (1, 1)
    assert TopicReplication.from_settings() == TopicReplication(1, 1)

    env(SLUICE_TOPIC_REPLICATION_FACTOR="3", SLUICE_TOPIC_MIN_INSYNC_REPLICAS="2")
    config = RuntimeConfig.from_env()
    assert (config.topic_replication_factor, config.topic_min_insync_replicas) == (3, 2)
    replication = TopicReplication.from_settings()
    assert replication == TopicReplication(3, 2)
    assert replication.topic_config() == {"min.insync.replicas": "2"}


def test_min_insync_replicas_above_the_replication_factor_is_refused(env):
    env(SLUICE_TOPIC_REPLICATION_FACTOR="2", SLUICE_TOPIC_MIN_INSYNC_REPLICAS="3")
    with pytest.raises(SettingsError) as refused:
        RuntimeSettings.load()
    assert str(refused.value) == (
        "SLUICE_TOPIC_MIN_INSYNC_REPLICAS must not exceed SLUICE_TOPIC_REPLICATION_FACTOR (2): "
        "no write could ever be confirmed, got '3'"
    )
