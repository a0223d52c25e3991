"""Config model of the preview sink (the console's live tail of a channel)."""

from __future__ import annotations

from pydantic import ConfigDict, Field

from pipelines.spec.configs.base import StageConfig

MAX_PREVIEW_EVENTS = 1000


class PreviewSinkConfig(StageConfig):
    """Keep the newest events of the channel for the console's live tail."""

    model_config = ConfigDict(title="Preview sink")

    max_events: int = Field(
        100,
        title="Events kept",
        description="How many of the newest events the live tail keeps.",
        ge=1,
        le=MAX_PREVIEW_EVENTS,
    )
