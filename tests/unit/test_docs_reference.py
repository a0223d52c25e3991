"""The manual's configuration reference (docs/gen/sluice_reference.py), rendered from the
settings classes: every variable is on it, and a setting it cannot describe stops the build."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
from pydantic import Field

from console.config import ConsoleSettings
from runtime_adapter.config import RuntimeSettings, SluiceSettings, environment_names

GEN = Path(__file__).resolve().parents[2] / "docs" / "gen"


def load(name: str):
    spec = importlib.util.spec_from_file_location(name, GEN / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


reference = load("sluice_reference")


def test_every_variable_is_on_the_page_once_with_its_default():
    page = reference.configuration_page([RuntimeSettings, ConsoleSettings])

    for settings_class in (RuntimeSettings, ConsoleSettings):
        for name in settings_class.model_fields:
            variable = environment_names(settings_class, name)[0]
            assert page.count(f"| `{variable}` |") == 1, variable
    assert "| `SLUICE_WARM_DRIVERS` | whole number, at least 0 | `1` |" in page
    assert "| `SLUICE_LOG_FORMAT` | one of `text`, `json` | `text` |" in page
    assert "| `SLUICE_ALLOWED_HOSTS` | comma-separated list | `127.0.0.1,localhost` |" in page
    assert "| `SLUICE_SECRET_KEY` | text (secret) | unset |" in page


def test_the_hooks_point_at_the_real_settings_classes():
    hooks = load("hooks")
    assert hooks.SETTINGS_CLASSES == (
        "runtime_adapter.config:RuntimeSettings",
        "console.config:ConsoleSettings",
    )


def test_a_setting_without_a_description_stops_the_build():
    class Undescribed(SluiceSettings):
        colour: str = Field("blue")

    with pytest.raises(reference.ReferenceError, match="colour has no description"):
        reference.configuration_page([Undescribed])
