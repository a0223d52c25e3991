"""MkDocs hooks (``hooks:`` in ``mkdocs.yml``): add the generated reference pages to the site.

The pages are rendered from the code at every build (``sluice_reference``), never committed,
so a page cannot go stale; a model or setting the renderer cannot describe fails the build.
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.structure.files import File, Files

sys.path.insert(0, str(Path(__file__).resolve().parent))

import sluice_reference

SETTINGS_CLASSES = (
    "runtime_adapter.config:RuntimeSettings",
    "console.config:ConsoleSettings",
)
"""The settings objects (pydantic-settings) of the runtime and the console, as
``module:class``, each a section of the configuration reference."""


def settings_page() -> str:
    classes = []
    for entry in SETTINGS_CLASSES:
        module_name, _, class_name = entry.partition(":")
        classes.append(getattr(importlib.import_module(module_name), class_name))
    return sluice_reference.configuration_page(classes)


PAGES = {
    "reference/channel-spec.md": sluice_reference.channel_spec_page,
    "reference/plugins.md": sluice_reference.plugin_catalogue_page,
    "reference/configuration.md": settings_page,
}


def on_files(files: Files, config: MkDocsConfig) -> Files:
    for path, render in PAGES.items():
        if files.get_file_from_path(path) is not None:
            raise sluice_reference.ReferenceError(f"docs/{path} is generated: delete the file")
        files.append(File.generated(config, path, content=render()))
    return files
