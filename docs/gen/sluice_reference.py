"""The manual's reference pages, rendered from the code so they cannot drift from it.

* :func:`channel_spec_page`: the channel spec (``pipelines.spec.channel``): its fields, the
  error policy, the runtime options, the size limits and the rules across stages.
* :func:`plugin_catalogue_page`: every plugin of the catalogue (``pipelines.spec.plugins``)
  with its config fields, rendered from the same JSON Schema ``GET /api/v1/plugins/`` serves
  and the builder's forms are made from.
* :func:`configuration_page`: every setting of a pydantic-settings class, with its environment
  variable, default and description.

``docs/gen/hooks.py`` adds the pages to the site at build time (``mkdocs build``); nothing
generated is committed. A schema keyword this module does not know, or a setting without a
description, stops the build instead of being left out of the page.
"""

from __future__ import annotations

import inspect
import json
import re
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from types import UnionType
from typing import Any, Literal, Union, get_args, get_origin

from pydantic import AliasChoices, AliasPath, BaseModel

REPO_ROOT = Path(__file__).resolve().parents[2]

GENERATED_NOTE = (
    '!!! note "Generated page"\n'
    "    This page is generated from {source} each time the site is built; edit the code, "
    "not the page.\n"
)

# JSON Schema keywords that only describe (rendered as text) or structure (walked).
_DESCRIPTIVE = {"title", "description", "default", "examples", "discriminator", "writeOnly"}
_DESCRIPTIVE |= {"x-sluice-field-path"}  # pipelines.spec.fieldpaths.FIELD_PATH_KEY
_STRUCTURAL = {"type", "$ref", "anyOf", "oneOf", "items", "additionalProperties", "properties"}
_STRUCTURAL |= {"required", "enum", "const", "format", "$defs"}
# Constraints, each with how it reads in a description.
_CONSTRAINTS = {
    "minimum": "at least {}",
    "maximum": "at most {}",
    "exclusiveMinimum": "more than {}",
    "exclusiveMaximum": "less than {}",
    "multipleOf": "a multiple of {}",
    "minLength": "at least {} character(s)",
    "maxLength": "at most {} character(s)",
    "pattern": "matching {}",
    "minItems": "at least {} item(s)",
    "maxItems": "at most {} item(s)",
    "uniqueItems": "items unique",
    "minProperties": "at least {} entry(ies)",
    "maxProperties": "at most {} entry(ies)",
}
_KNOWN_KEYWORDS = _DESCRIPTIVE | _STRUCTURAL | set(_CONSTRAINTS)


class ReferenceError(ValueError):
    """The code holds something the reference cannot render faithfully."""


# --- Markdown helpers -------------------------------------------------------------------


_RST_ROLE = re.compile(r":(?:func|data|class|meth|mod|attr|obj):`~?([^`]+)`")
_RST_LITERAL = re.compile(r"``(.+?)``")


_CODE_SPAN = re.compile(r"(`+).+?\1")
_MARKDOWN_SPECIAL = re.compile(r"([\\*_\[\]])")


def prose(text: str | None) -> str:
    """A docstring or description as one Markdown paragraph: reST literals and roles become
    code, and outside code the characters Markdown would read as markup are escaped
    (``*.jsonl``, ``sluice.ingest.<channel>``)."""
    if not text:
        return ""
    text = _RST_ROLE.sub(r"`\1`", text)
    text = _RST_LITERAL.sub(r"`\1`", text)
    text = " ".join(text.split())
    parts, end = [], 0
    for span in _CODE_SPAN.finditer(text):
        parts += [_escape(text[end : span.start()]), span.group()]
        end = span.end()
    parts.append(_escape(text[end:]))
    return "".join(parts)


def _escape(text: str) -> str:
    return _MARKDOWN_SPECIAL.sub(r"\\\1", text).replace("<", "&lt;")


def cell(text: str) -> str:
    """Text that is safe inside a Markdown table cell."""
    return text.replace("|", "\\|").replace("\n", " ")


def literal(text: str) -> str:
    """Text as inline code, whatever backticks it holds."""
    fence = "`" * (max((len(run) for run in re.findall("`+", text)), default=0) + 1)
    pad = " " if len(fence) > 1 else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def code(value: Any) -> str:
    """A JSON value as inline code."""
    return literal(json.dumps(value, ensure_ascii=False))


def table(header: Iterable[str], rows: Iterable[Iterable[str]]) -> list[str]:
    header = list(header)
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(cell(value) for value in row) + " |" for row in rows]
    return lines


def slug(*parts: str) -> str:
    return "-".join(re.sub(r"[^a-z0-9]+", "-", part.lower()).strip("-") for part in parts)


# --- JSON Schema -> Markdown --------------------------------------------------------------


class SchemaRenderer:
    """Renders one JSON Schema (with its ``$defs``) as a field table and one table per
    nested object it refers to, each under an anchor that starts with ``anchor``."""

    def __init__(self, model: type[BaseModel], anchor: str) -> None:
        self.model = model
        self.schema = model.model_json_schema()
        self.defs: Mapping[str, Any] = self.schema.get("$defs", {})
        self.models = {nested.__name__: nested for nested in models_in(model)}
        self.anchor = anchor
        self.referenced: list[str] = []  # $defs in order of first mention

    def def_anchor(self, name: str) -> str:
        return slug(self.anchor, name)

    def _ref_name(self, ref: str) -> str:
        prefix = "#/$defs/"
        if not ref.startswith(prefix) or ref[len(prefix) :] not in self.defs:
            raise ReferenceError(f"cannot follow $ref {ref!r}")
        name = ref[len(prefix) :]
        if name not in self.referenced:
            self.referenced.append(name)
        return name

    def type_of(self, schema: Mapping[str, Any]) -> str:
        """The type of a value, in words (``list of string``, ``"a" | "b"``, a link)."""
        unknown = set(schema) - _KNOWN_KEYWORDS
        if unknown:
            raise ReferenceError(f"unknown JSON Schema keywords {sorted(unknown)} in {schema}")
        if "$ref" in schema:
            if self.defs.get(schema["$ref"].removeprefix("#/$defs/")) == {}:
                return "any JSON value"  # pydantic's JsonValue: no schema at all
            name = self._ref_name(schema["$ref"])
            title = self.defs[name].get("title", name)
            return f"[{title}](#{self.def_anchor(name)})"
        for key in ("anyOf", "oneOf"):
            if key in schema:
                return " or ".join(self.type_of(option) for option in schema[key])
        if "const" in schema:
            return code(schema["const"])
        if "enum" in schema:
            return " | ".join(code(value) for value in schema["enum"])
        kind = schema.get("type")
        if kind == "array":
            items = schema.get("items")
            return f"list of {self.type_of(items)}" if items else "list"
        if kind == "object":
            values = schema.get("additionalProperties")
            if isinstance(values, Mapping) and values:
                return f"object of {self.type_of(values)}"
            if "properties" in schema:
                raise ReferenceError(f"inline object with properties: {schema}")
            return "object"
        if kind is None:
            return "any JSON value"
        if isinstance(kind, list):
            return " or ".join(kind)
        if schema.get("writeOnly") or schema.get("format") == "password":
            return f"{kind} (secret)"
        return f"{kind} ({schema['format']})" if "format" in schema else kind

    def constraints(self, schema: Mapping[str, Any]) -> list[str]:
        """Every constraint on a value or, for a union, on each of its options."""
        found = [_constraint(key, schema[key]) for key in _CONSTRAINTS if key in schema]
        for key in ("anyOf", "oneOf", "items", "additionalProperties"):
            nested = schema.get(key)
            for option in nested if isinstance(nested, list) else [nested]:
                if isinstance(option, Mapping) and "$ref" not in option:
                    found += self.constraints(option)
        return found

    def is_secret(self, schema: Mapping[str, Any]) -> bool:
        if schema.get("writeOnly"):
            return True
        options = schema.get("anyOf", []) + schema.get("oneOf", [])
        return any(self.is_secret(option) for option in options if isinstance(option, Mapping))

    def default(self, model: type[BaseModel] | None, name: str, prop: Mapping[str, Any]) -> str:
        """A field's default; JSON Schema leaves out those made by a ``default_factory``."""
        if "default" in prop:
            return code(prop["default"])
        field = model.model_fields.get(name) if model else None
        if field is None or field.default_factory is None:
            raise ReferenceError(f"no default for optional field {name!r} of {model}")
        if field.default_factory_takes_validated_data:
            return "computed from the other fields"
        value = field.default_factory()  # type: ignore[call-arg]
        if isinstance(value, BaseModel):
            return "the defaults of its fields"
        return code(value)

    def field_rows(
        self, schema: Mapping[str, Any], model: type[BaseModel] | None
    ) -> Iterator[list[str]]:
        required = set(schema.get("required", ()))
        for name, prop in schema.get("properties", {}).items():
            notes = [prose(prop.get("description"))] if prop.get("description") else []
            if not notes and prop.get("title"):
                notes.append(prose(prop["title"]) + ".")
            constraints = self.constraints(prop)
            if constraints:
                notes.append("Constraints: " + ", ".join(constraints) + ".")
            if self.is_secret(prop):
                notes.append("Write-only: never returned by the API, encrypted at rest.")
            if prop.get("x-sluice-field-path"):
                notes.append("A path into the event: the builder suggests the known fields.")
            if prop.get("examples"):
                notes.append("Example: " + ", ".join(code(e) for e in prop["examples"]) + ".")
            default = "*required*" if name in required else self.default(model, name, prop)
            yield [f"`{name}`", self.type_of(prop), default, " ".join(notes)]

    def fields_table(self, schema: Mapping[str, Any], model: type[BaseModel] | None) -> list[str]:
        if not schema.get("properties"):
            return ["No settings: `{}` is the whole config."]
        rows = list(self.field_rows(schema, model))
        closed = schema.get("additionalProperties") is False
        lines = table(("field", "type", "default", "meaning"), rows)
        if closed:
            lines += ["", "Any other field is refused."]
        return lines

    def nested_sections(self, level: int) -> list[str]:
        """One section per nested object referred to, in order of first mention (rendering a
        section may mention more)."""
        lines: list[str] = []
        done = 0
        while done < len(self.referenced):
            name = self.referenced[done]
            done += 1
            definition = self.defs[name]
            title = definition.get("title", name)
            lines += ["", f"{'#' * level} {title} {{#{self.def_anchor(name)}}}", ""]
            if definition.get("description"):
                lines += [prose(definition["description"]), ""]
            lines += self.fields_table(definition, self.models.get(name))
        return lines


_PLURALS = {"character(s)": "characters", "item(s)": "items", "entry(ies)": "entries"}


def _constraint(keyword: str, value: Any) -> str:
    text = _CONSTRAINTS[keyword].format(literal(value) if keyword == "pattern" else _number(value))
    for word, plural in _PLURALS.items():
        text = text.replace(word, word.split("(")[0] if value == 1 else plural)
    return text


def _number(value: Any) -> str:
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return f"{value:,}" if isinstance(value, int) and not isinstance(value, bool) else str(value)


# --- the channel spec -------------------------------------------------------------------


def channel_spec_page() -> str:
    """The channel spec reference: fields, error policy, runtime options, limits, rules."""
    from pipelines.spec import channel
    from pipelines.spec.patterns import limits

    renderer = SchemaRenderer(channel.ChannelSpec, "spec")
    lines = [
        "# Channel spec reference",
        "",
        GENERATED_NOTE.format(source="`pipelines/spec/channel.py`"),
        prose(channel.ChannelSpec.__doc__),
        "Each stage's `config` is described in the [plugin catalogue](plugins.md); the "
        "[channel spec guide](../channels.md) explains them with examples.",
        "",
        "## The spec {#spec}",
        "",
        *renderer.fields_table(renderer.schema, channel.ChannelSpec),
        *renderer.nested_sections(level=3),
        "",
        "## Errors {#errors}",
        "",
        prose(channel.SpecError.__doc__),
        "",
        "Validation reports every problem of every stage at once (it stops early only past "
        "the size limits below), each at the path of the field it concerns, so the builder "
        "can mark the exact node.",
        "",
        "## Size limits {#limits}",
        "",
        *table(
            ("limit", "value", "error at"),
            [
                ["the spec as compact UTF-8 JSON", _bytes(channel.MAX_SPEC_BYTES), '`""`'],
                ["transforms in one channel", _number(channel.MAX_TRANSFORMS), "`transforms`"],
                [
                    "one stage's config as compact UTF-8 JSON",
                    _bytes(channel.MAX_STAGE_CONFIG_BYTES),
                    "`<stage>.config`",
                ],
                [
                    "a stage's plugin type",
                    f"{_number(channel.MAX_STAGE_TYPE_LENGTH)} characters",
                    "`<stage>.type`",
                ],
            ],
        ),
        "",
        "Event patterns (the `filter` transform) have limits of their own "
        f"(`pipelines/spec/patterns/limits.py`): {_pattern_limits(limits)}.",
        "",
        "## Rules across stages {#rules}",
        "",
        *_rules(channel),
    ]
    return "\n".join(lines) + "\n"


def _bytes(size: int) -> str:
    return f"{size // 1024} KiB" if size % 1024 == 0 else f"{size:,} bytes"


def _pattern_limits(limits: Any) -> str:
    names = [name for name in dir(limits) if name.startswith("MAX_")]
    return ", ".join(f"`{name}` {_number(getattr(limits, name))}" for name in sorted(names))


def _types(names: Iterable[str]) -> str:
    return ", ".join(f"`{name}`" for name in sorted(names))


def _rules(channel: Any) -> list[str]:
    """What ``validate_spec`` refuses beyond each field's own type, from its constants."""
    return [
        f"* A dead-letter target (`errors.dead_letter`) is a sink stage, but not "
        f"{_types(channel.NOT_DEAD_LETTER_SINKS)}, and needs `errors.tolerance: all`.",
        f"* `runtime.interval_seconds` is from {_number(channel.MIN_INTERVAL_SECONDS)} to "
        f"{_number(channel.MAX_INTERVAL_SECONDS)} seconds; `available-now` takes none.",
        f"* `available-now` needs a source with an end: {_types(channel.AVAILABLE_NOW_SOURCES)}. "
        f"{prose(_attribute_doc(channel, 'AVAILABLE_NOW_SOURCES'))}",
        f"* `real-time` needs a source among {_types(channel.REAL_TIME_SOURCES)}, a sink among "
        f"{_types(channel.REAL_TIME_SINKS)}, transforms among "
        f"{_types(channel.REAL_TIME_TRANSFORMS)}, `errors.tolerance: none`, and an interval of "
        f"at least {_number(channel.REAL_TIME_MIN_INTERVAL_SECONDS)} seconds when one is given.",
        "",
        "A mode the stages cannot run in is refused at the field that prevents it "
        "(`source.type`, `sink.type`, `transforms[i].type`, `errors.tolerance`, "
        "`runtime.interval_seconds`).",
    ]


def _attribute_doc(module: Any, name: str) -> str:
    """The docstring written under a module constant (``NAME = ...`` then a string)."""
    source = inspect.getsource(module)
    match = re.search(rf"^{name}\b[^\n]*\n(?:[^\n]+\n)*?\"\"\"(.*?)\"\"\"", source, re.M | re.S)
    if not match:
        raise ReferenceError(f"{module.__name__}.{name} has no docstring")
    return match.group(1)


# --- the plugin catalogue ---------------------------------------------------------------

KIND_TITLES = {"source": "Sources", "transform": "Transforms", "sink": "Sinks"}


def plugin_catalogue_page() -> str:
    """Every plugin with its config fields, nested objects and further checks."""
    from pipelines.spec.plugins import PLUGIN_KINDS, plugins

    catalogue = plugins()
    lines = [
        "# Plugin catalogue",
        "",
        GENERATED_NOTE.format(
            source="the plugin catalogue (`pipelines/spec/plugins.py`) and the config models "
            "in `pipelines/spec/configs/`"
        ),
        'A stage is `{"type": ..., "config": {...}}`; this page lists every `type` of each '
        "kind and what its `config` takes. `GET /api/v1/plugins/` serves the same catalogue "
        "with each config's JSON Schema, from which the builder makes its forms. The "
        "[channel spec guide](../channels.md) explains the plugins with examples.",
        "",
        *table(
            ("kind", "type", "title", "what it does"),
            [
                [
                    plugin.kind,
                    f"[`{plugin.type}`](#{slug(plugin.kind, plugin.type)})",
                    plugin.title,
                    prose(plugin.description),
                ]
                for plugin in catalogue
            ],
        ),
    ]
    for kind in PLUGIN_KINDS:
        lines += ["", f"## {KIND_TITLES[kind]} {{#{slug(kind)}s}}"]
        for plugin in plugins(kind):
            lines += ["", *_plugin_section(plugin)]
    return "\n".join(lines) + "\n"


def _plugin_section(plugin: Any) -> list[str]:
    model = plugin.config_model
    anchor = slug(plugin.kind, plugin.type)
    renderer = SchemaRenderer(model, anchor)
    lines = [f"### `{plugin.type}` {plugin.kind}: {plugin.title} {{#{anchor}}}", ""]
    lines += [prose(plugin.description), ""]
    doc = prose(inspect.getdoc(model))
    if doc and doc != prose(plugin.description):
        lines += [doc, ""]
    lines += [f"Config model: `{model.__module__}.{model.__qualname__}`.", ""]
    lines += renderer.fields_table(renderer.schema, model)
    checks = _further_checks(model)
    if checks:
        lines += ["", "Checked further when the spec is saved (errors at the field's path):", ""]
        lines += checks
    lines += renderer.nested_sections(level=4)
    return lines


def _further_checks(model: type[BaseModel]) -> list[str]:
    """The fields a model's own validators check beyond their types (nested models'
    validators included), with what each validator's docstring says."""
    documented: list[str] = []
    undocumented: list[str] = []
    for owner in models_in(model):
        title = owner.model_config.get("title") or owner.__name__
        decorators = owner.__pydantic_decorators__
        checks = [
            (", ".join(f"`{name}`" for name in validator.info.fields), validator.func)
            for validator in decorators.field_validators.values()
        ] + [
            ("the whole object", validator.func)
            for validator in decorators.model_validators.values()
        ]
        for fields, func in checks:
            where = fields if owner is model else f"{fields} of *{title}*"
            doc = prose(inspect.getdoc(func))
            if doc:
                documented.append(f"* {where}: {doc}")
            elif where not in undocumented:
                undocumented.append(where)
    if undocumented:
        documented.append("* " + ", ".join(undocumented) + ".")
    return documented


def models_in(model: type[BaseModel]) -> list[type[BaseModel]]:
    """``model`` and every model its fields hold, at any depth, each once."""
    seen: list[type[BaseModel]] = []
    pending = [model]
    while pending:
        current = pending.pop(0)
        if current in seen:
            continue
        seen.append(current)
        for field in current.model_fields.values():
            pending += [arg for arg in _type_args(field.annotation) if arg not in seen]
    return seen


def _type_args(annotation: Any) -> Iterator[type[BaseModel]]:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        yield annotation
    for arg in getattr(annotation, "__args__", ()) or ():
        yield from _type_args(arg)
    origin = getattr(annotation, "__origin__", None)
    if origin is not None and getattr(annotation, "__metadata__", None) is not None:
        yield from _type_args(origin)


# --- the configuration ------------------------------------------------------------------


def configuration_page(settings_classes: Iterable[type[BaseModel]]) -> str:
    """Every setting of each pydantic-settings class, a section per class: variable, type,
    default, meaning.

    A field whose type is itself a settings class is rendered as a section of its own (with
    that class's own prefix); a setting a class inherits is shown once, in its first section.
    Every field must have a description.
    """
    lines = [
        "# Configuration reference",
        "",
        GENERATED_NOTE.format(
            source=" and ".join(f"`{_qualified(cls)}`" for cls in settings_classes)
        ),
        "Every setting comes from the environment; unset or empty means the default shown, "
        "and a process with an invalid value refuses to start, naming the variable. "
        "[Operations](../operations.md#configuration) explains the settings by topic.",
    ]
    shown: set[str] = set()
    for settings_class in settings_classes:
        title = settings_class.model_config.get("title") or _qualified(settings_class)
        lines += _settings_section(settings_class, 2, title, shown)
    return "\n".join(lines) + "\n"


def _qualified(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


def _settings_section(
    settings_class: type[BaseModel], level: int, title: str, shown: set[str]
) -> list[str]:
    lines = ["", f"{'#' * level} {title} {{#{slug(title)}}}"]
    doc = prose(inspect.getdoc(settings_class))
    if doc:
        lines += ["", doc]
    lines += ["", f"Defined in `{_qualified(settings_class)}`."]
    rows: list[list[str]] = []
    groups: list[tuple[str, type[BaseModel]]] = []
    for name, field in settings_class.model_fields.items():
        group = _settings_group(field.annotation)
        if group is not None:
            groups.append((field.description or _qualified(group), group))
            continue
        if not field.description:
            raise ReferenceError(f"{_qualified(settings_class)}.{name} has no description")
        names = environment_names(settings_class, name)
        if names[0] in shown:
            continue
        shown.update(names)
        variable = "<br>".join(f"`{variable}`" for variable in names)
        rows.append(
            [
                variable,
                _annotation_text(field.annotation, field.metadata),
                _default(field),
                prose(field.description),
            ]
        )
    if rows:
        lines += ["", *table(("variable", "type", "default", "meaning"), rows)]
    for group_title, group in groups:
        lines += _settings_section(group, level + 1, group_title, shown)
    return lines


def _settings_group(annotation: Any) -> type[BaseModel] | None:
    """The settings class a field holds, if it holds one (a group of settings)."""
    try:
        from pydantic_settings import BaseSettings
    except ImportError:  # pragma: no cover - only settings classes come here
        return None
    if isinstance(annotation, type) and issubclass(annotation, BaseSettings):
        return annotation
    return None


def environment_names(settings_class: type[BaseModel], name: str) -> list[str]:
    """The environment variables a field is read from, the first the one to use.

    An alias (``validation_alias`` or ``alias``) names them; otherwise it is the class's
    ``env_prefix`` and the field name, in capitals unless the class is case-sensitive.
    """
    field = settings_class.model_fields[name]
    config = settings_class.model_config
    alias = field.validation_alias or field.alias
    if isinstance(alias, str):
        names = [alias]
    elif isinstance(alias, AliasChoices):
        if any(not isinstance(choice, str) for choice in alias.choices):
            raise ReferenceError(f"{settings_class.__name__}.{name}: an AliasPath has no variable")
        names = [str(choice) for choice in alias.choices]
    elif isinstance(alias, AliasPath):
        raise ReferenceError(f"{settings_class.__name__}.{name}: an AliasPath has no variable")
    else:
        names = [f"{config.get('env_prefix', '')}{name}"]
    if not config.get("case_sensitive", False):
        names = [variable.upper() for variable in names]
    return names


_TYPE_WORDS = {
    str: "text",
    int: "whole number",
    float: "number",
    bool: "`true` or `false`",
    Path: "path",
}


def _annotation_text(annotation: Any, metadata: Iterable[Any] = ()) -> str:
    """A setting's type in words (``whole number, at least 1``, ``one of `text`, `json```);
    a type it has no words for stops the build."""
    options = [arg for arg in get_args(annotation) if arg is not type(None)]
    if get_origin(annotation) in (Union, UnionType):
        if len(options) != 1:
            raise ReferenceError(f"cannot describe the union {annotation}")
        annotation = options[0]
    origin = get_origin(annotation)
    if origin is Literal:
        text = "one of " + ", ".join(f"`{value}`" for value in get_args(annotation))
    elif origin is list and get_args(annotation) == (str,):
        text = "comma-separated list"
    elif isinstance(annotation, type) and annotation.__name__ == "SecretStr":
        text = "text (secret)"
    elif annotation in _TYPE_WORDS:
        text = _TYPE_WORDS[annotation]
    else:
        raise ReferenceError(f"no words for the setting type {annotation}")
    bounds = [
        f"at least {item.ge}" if hasattr(item, "ge") else f"more than {item.gt}"
        for item in metadata
        if hasattr(item, "ge") or hasattr(item, "gt")
    ]
    return ", ".join([text, *bounds])


def _default(field: Any) -> str:
    if field.is_required():
        return "*required*"
    if field.default_factory is not None:
        return "computed at start (see meaning)"
    value = field.default
    if value is None:
        return "unset"
    if hasattr(value, "get_secret_value"):
        return "(secret)"
    if isinstance(value, Path):
        value = _repo_relative(value)
    if isinstance(value, (list, tuple, set, frozenset)):
        value = ",".join(str(item) for item in value) if value else ""
    if isinstance(value, bool):
        value = "true" if value else "false"
    return f"`{value}`" if str(value) != "" else "empty"


def _repo_relative(path: Path) -> str:
    """A default path inside the checkout, shown from the checkout (not this machine's)."""
    try:
        return "./" + str(path.resolve().relative_to(REPO_ROOT))
    except ValueError:
        return str(path)
