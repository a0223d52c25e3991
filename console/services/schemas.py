"""The schema registry's writes: register, delete, set compatibility levels.

Confluent Schema Registry's semantics (docs/schema-registry.md): one global id per schema
text (type, canonical text and references), versions numbered per subject from 1, a new
version checked against the subject's previous ones under its compatibility level (409 when
it fails), soft deletes first and permanent deletes after. Reads: :mod:`console.selectors.schemas`.

Every subject belongs to a team and each function here works in one team's registry: the same
subject name in another team is another subject; references name subjects of the same team.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass

from django.db import transaction
from django.db.models import Max

from console.errors import RegistryError
from console.models import RegistryConfig, RegistrySchema, Subject, SubjectVersion, Team
from console.schemas import (
    COMPATIBILITY_LEVELS,
    InvalidSchema,
    ParsedSchema,
    check_compatibility,
    parse_schema,
)
from console.schemas.base import SCHEMA_TYPES
from console.selectors import schemas as selectors


@dataclass(frozen=True)
class Candidate:
    """A schema as a request gives it: type, text and references."""

    schema_type: str
    schema: str
    references: list[dict]

    @classmethod
    def from_body(cls, body: object) -> Candidate:
        """From Confluent's request body ``{"schema", "schemaType", "references"}``."""
        if not isinstance(body, dict) or not isinstance(body.get("schema"), str):
            raise RegistryError(422, 42201, "Invalid schema: the body needs a string 'schema'")
        schema_type = body.get("schemaType") or "AVRO"
        if schema_type not in SCHEMA_TYPES:
            raise RegistryError(422, 42201, f"Invalid schema type {schema_type!r}")
        references = body.get("references") or []
        if not isinstance(references, list):
            raise RegistryError(422, 42201, "Invalid schema: 'references' is a list")
        refs = [
            {"name": str(r["name"]), "subject": str(r["subject"]), "version": int(r["version"])}
            for r in references
            if isinstance(r, dict)
            and {"name", "subject", "version"} <= set(r)
            and str(r["version"]).lstrip("-").isdigit()
        ]
        if len(refs) != len(references):
            raise RegistryError(
                422, 42201, "Invalid schema: a reference has name, subject, version"
            )
        return cls(str(schema_type), body["schema"], refs)


def parse(team: Team, candidate: Candidate) -> ParsedSchema:
    """The candidate parsed with its references (the team's subjects); 42201 when it does not
    parse."""
    texts = selectors.references_text(team, candidate.references)
    try:
        return parse_schema(candidate.schema_type, candidate.schema, texts)
    except InvalidSchema as exc:
        raise RegistryError(422, 42201, str(exc)) from exc


def parsed_version(version: SubjectVersion) -> ParsedSchema:
    stored = version.schema
    return parse(
        version.subject.team, Candidate(stored.schema_type, stored.schema, list(stored.references))
    )


def fingerprint(schema_type: str, canonical: str, references: list[dict]) -> str:
    key = json.dumps([schema_type, canonical, references], sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(key.encode()).hexdigest()


def incompatibilities(
    subject: Subject | None, parsed: ParsedSchema, against: list[SubjectVersion]
) -> list[str]:
    """Why ``parsed`` may not follow ``against`` (oldest first) under the subject's level."""
    level = selectors.subject_compatibility(subject)
    return check_compatibility(level, parsed, [parsed_version(v) for v in against])


MAX_SUBJECT = 255
"""Characters a subject name may have (Confluent Cloud's limit; the column's size)."""
_RESERVED_SUBJECTS = frozenset({".", "..", "__GLOBAL", "__EMPTY"})


def check_subject(name: str) -> None:
    """Refuse a subject name Confluent Schema Registry would refuse, or that a path, a
    proxy or the database would take for something else: 422 with error code 42208.

    Confluent's rule (no control character, not a reserved context name) plus a length of at
    most :data:`MAX_SUBJECT` and no ``/`` or ``\\``: a subject names a topic's key or value
    (``orders-value``) or a record (``com.acme.Order``), never a path, and a ``../`` segment
    in a URL is resolved away by proxies before the registry sees it."""
    why = ""
    if not name:
        why = "it is empty"
    elif len(name) > MAX_SUBJECT:
        why = f"it has {len(name)} characters, more than {MAX_SUBJECT}"
    elif any(ord(c) < 0x20 or 0x7F <= ord(c) <= 0x9F for c in name):
        why = "it holds a control character"
    elif "/" in name or "\\" in name:
        why = "it holds a / or a \\ (a subject is not a path)"
    elif name in _RESERVED_SUBJECTS:
        why = f"{name!r} is reserved"
    if why:
        raise RegistryError(422, 42208, f"Invalid subject: {why}")


def register(team: Team, name: str, candidate: Candidate, *, actor: str = "") -> SubjectVersion:
    """Register ``candidate`` under subject ``name``: the existing version when the subject
    already has this schema, else a new version (409 when incompatible, 42201 invalid, 42208
    an invalid subject name)."""
    return register_version(team, name, candidate, actor=actor)[0]


def register_version(
    team: Team, name: str, candidate: Candidate, *, actor: str = ""
) -> tuple[SubjectVersion, bool]:
    """:func:`register`, saying whether a version was created (``False``: the subject already
    had this exact schema, and that version is returned unchanged)."""
    check_subject(name)
    parsed = parse(team, candidate)
    print_ = fingerprint(parsed.schema_type, parsed.canonical, candidate.references)
    with transaction.atomic():
        subject, _ = Subject.objects.get_or_create(team=team, name=name)
        subject = Subject.objects.select_for_update().get(pk=subject.pk)
        live = list(
            subject.versions.filter(deleted=False).select_related("schema").order_by("version")
        )
        for existing in live:
            if existing.schema.fingerprint == print_:
                return existing, False
        problems = incompatibilities(subject, parsed, live)
        if problems:
            raise RegistryError(
                409,
                409,
                f"Schema being registered is incompatible with an earlier schema for subject "
                f'"{name}", details: {problems}',
            )
        stored, _ = RegistrySchema.objects.get_or_create(
            fingerprint=print_,
            defaults={
                "schema_type": parsed.schema_type,
                "schema": parsed.canonical,
                "references": candidate.references,
            },
        )
        stored.teams.add(team)  # its id is found in the team's registry from now on
        last = subject.versions.aggregate(last=Max("version"))["last"] or 0
        created = SubjectVersion.objects.create(
            subject=subject, version=last + 1, schema=stored, created_by=actor
        )
        return created, True


@dataclass(frozen=True)
class RegistrationCheck:
    """What :func:`register_version` would do with a candidate, worked out without doing it."""

    team: str
    subject: str
    exists: bool
    compatibility: str
    problems: list[str]
    registered_version: int | None
    next_version: int | None

    @property
    def compatible(self) -> bool:
        return not self.problems


def registration_check(team: Team, name: str, candidate: Candidate) -> RegistrationCheck:
    """Whether registering ``candidate`` under ``name`` would be accepted, and as which
    version, by the same rules :func:`register_version` applies (an invalid name or schema
    raises the same :class:`RegistryError`). Changes nothing: the console's form says this
    before the user registers."""
    check_subject(name)
    parsed = parse(team, candidate)
    print_ = fingerprint(parsed.schema_type, parsed.canonical, candidate.references)
    subject = Subject.objects.filter(team=team, name=name).first()
    live = (
        list(subject.versions.filter(deleted=False).select_related("schema").order_by("version"))
        if subject
        else []
    )
    level = selectors.subject_compatibility(subject)
    same = next((v.version for v in live if v.schema.fingerprint == print_), None)
    if same is not None:
        return RegistrationCheck(team.name, name, True, level, [], same, None)
    problems = incompatibilities(subject, parsed, live)
    last = (subject.versions.aggregate(last=Max("version"))["last"] if subject else None) or 0
    return RegistrationCheck(
        team.name, name, bool(live), level, problems, None, None if problems else last + 1
    )


def delete_subject(team: Team, name: str, *, permanent: bool) -> list[int]:
    """Soft-delete every version of ``name`` (40404 if already soft-deleted), or with
    ``permanent`` remove the soft-deleted ones (40405 unless soft-deleted first)."""
    with transaction.atomic():
        versions = list(
            SubjectVersion.objects.select_for_update().filter(
                subject__team=team, subject__name=name
            )
        )
        if not versions:
            raise selectors.subject_not_found(name)
        live = [v for v in versions if not v.deleted]
        numbers = sorted(v.version for v in versions)
        if permanent:
            if live:
                raise RegistryError(
                    404,
                    40405,
                    f"Subject '{name}' was not deleted first before being permanently deleted",
                )
            Subject.objects.filter(team=team, name=name).delete()
            return numbers
        if not live:
            raise RegistryError(
                404,
                40404,
                f"Subject '{name}' was soft deleted.Set permanent=true to delete permanently",
            )
        SubjectVersion.objects.filter(pk__in=[v.pk for v in live]).update(deleted=True)
        return sorted(v.version for v in live)


def delete_version(team: Team, name: str, version_id: str, *, permanent: bool) -> int:
    """Soft-delete one version, or with ``permanent`` remove a soft-deleted one."""
    with transaction.atomic():
        found = selectors.version(team, name, version_id, deleted=permanent)
        if permanent:
            if not found.deleted:
                raise RegistryError(
                    404,
                    40407,
                    f"Subject '{name}' Version {found.version} was not deleted first before "
                    "being permanently deleted",
                )
            found.delete()
            if not SubjectVersion.objects.filter(subject_id=found.subject_id).exists():
                Subject.objects.filter(pk=found.subject_id).delete()
            return found.version
        SubjectVersion.objects.filter(pk=found.pk).update(deleted=True)
        return found.version


def _level(body: object) -> str:
    level = body.get("compatibility") if isinstance(body, dict) else None
    if not isinstance(level, str) or level.upper() not in COMPATIBILITY_LEVELS:
        raise RegistryError(
            422,
            42203,
            f"Invalid compatibility level. Valid values are {list(COMPATIBILITY_LEVELS)}",
        )
    return level.upper()


def set_global_compatibility(body: object) -> str:
    level = _level(body)
    RegistryConfig.objects.update_or_create(pk=1, defaults={"compatibility": level})
    return level


def set_subject_compatibility(team: Team, name: str, body: object) -> str:
    check_subject(name)
    level = _level(body)
    Subject.objects.update_or_create(team=team, name=name, defaults={"compatibility": level})
    return level


def delete_global_compatibility() -> str:
    """Back to the default (BACKWARD); returns the level that was set."""
    before = selectors.global_compatibility()
    RegistryConfig.objects.filter(pk=1).delete()
    return before


def delete_subject_compatibility(team: Team, name: str) -> str:
    subject = Subject.objects.filter(team=team, name=name).first()
    if subject is None or not subject.compatibility:
        raise RegistryError(
            404, 40408, f"Subject '{name}' does not have subject-level compatibility configured"
        )
    before = subject.compatibility
    Subject.objects.filter(pk=subject.pk).update(compatibility="")
    return before
