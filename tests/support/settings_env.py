"""An environment without Sluice's settings, for tests of the settings classes."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from pydantic_settings import BaseSettings

from runtime_adapter.config import environment_names


def settings_env(
    monkeypatch: pytest.MonkeyPatch, *settings_classes: type[BaseSettings]
) -> Callable[..., None]:
    """Unset every variable the classes read; the returned ``set_env(NAME=value, …)`` sets
    some (``monkeypatch`` restores them all after the test)."""
    for settings_class in settings_classes:
        for name in settings_class.model_fields:
            for variable in environment_names(settings_class, name):
                monkeypatch.delenv(variable, raising=False)

    def set_env(**values: str) -> None:
        for name, value in values.items():
            monkeypatch.setenv(name, value)

    return set_env
