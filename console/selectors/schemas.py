"""Reads of the schema registry (the writes: :mod:`console.services.schemas`).

Subjects belong to a team: every read by subject name is within one team (a subject of
another team does not exist here). Schema ids are global, as in Confluent Schema Registry (the
same text has one id), but an id is only found through a team whose subject version uses it
(:func:`schema_by_id`)."""

from __future__ import annotations

from console.errors import RegistryError
from console.models import RegistryConfig, RegistrySchema, Subject, SubjectVersion, Team
from console.schemas.base import DEFAULT_COMPATIBILITY, InvalidSchema
from console.schemas.shape import Shape, shape_of


def subject_not_found(name: str) -> RegistryError:
    return RegistryError(404, 40401, f"Subject '{name}' not found.")


def global_compatibility() -> str:
    config = RegistryConfig.objects.filter(pk=1).first()
    return config.compatibility if config is not None else DEFAULT_COMPATIBILITY


def subject_compatibility(subject: Subject | None) -> str:
    """The level that applies to ``subject``: its own, else the global one."""
    if subject is not None and subject.compatibility:
        return subject.compatibility
    return global_compatibility()


def own_compatibility(team: Team, name: str) -> str:
    """The level set on subject ``name`` itself; ``""`` when none is."""
    found = (
        Subject.objects.filter(team=team, name=name).values_list("compatibility", flat=True).first()
    )
    return found or ""


def subject_names(team: Team, *, deleted: bool = False, prefix: str = "") -> list[str]:
    """The team's subjects with at least one version (soft-deleted ones too when
    ``deleted``)."""
    versions = SubjectVersion.objects.filter(subject__team=team)
    if not deleted:
        versions = versions.filter(deleted=False)
    if prefix:
        versions = versions.filter(subject__name__startswith=prefix)
    return sorted(set(versions.values_list("subject__name", flat=True)))


def subject_summaries(team_ids: set[int] | None, name: str | None = None) -> list[dict]:
    """Subjects with a live version of the teams ``team_ids`` (``None``: every team), by team
    and name: latest version, its id and type, how many versions, the level that applies and
    the subject's own (the console's list)."""
    live = SubjectVersion.objects.filter(deleted=False).select_related(
        "schema", "subject", "subject__team"
    )
    if team_ids is not None:
        live = live.filter(subject__team__in=team_ids)
    if name is not None:
        live = live.filter(subject__name=name)
    by_subject: dict[int, list[SubjectVersion]] = {}
    for found in live.order_by("subject__team__name", "subject__name", "version"):
        by_subject.setdefault(found.subject_id, []).append(found)
    default = global_compatibility()
    rows = []
    for versions_ in by_subject.values():
        latest = versions_[-1]
        own = latest.subject.compatibility
        rows.append(
            {
                "team": latest.subject.team.name,
                "name": latest.subject.name,
                "schema_type": latest.schema.schema_type,
                "latest_version": latest.version,
                "latest_id": latest.schema_id,
                "versions": len(versions_),
                "compatibility": own or default,
                "compatibility_set": own,
                "updated_at": latest.created_at,
            }
        )
    return rows


def subject(team: Team, name: str) -> Subject:
    found = Subject.objects.filter(team=team, name=name).first()
    if found is None:
        raise subject_not_found(name)
    return found


def versions(team: Team, name: str, *, deleted: bool = False) -> list[SubjectVersion]:
    """The versions of the team's subject ``name``, oldest first; 40401 when it has none."""
    queryset = SubjectVersion.objects.filter(subject__team=team, subject__name=name).select_related(
        "schema", "subject"
    )
    if not deleted:
        queryset = queryset.filter(deleted=False)
    found = list(queryset.order_by("version"))
    if not found:
        raise subject_not_found(name)
    return found


def version(
    team: Team, name: str, version_id: str | int, *, deleted: bool = False
) -> SubjectVersion:
    """Version ``version_id`` (a number, ``latest`` or ``-1``) of the team's subject ``name``."""
    all_versions = versions(team, name, deleted=deleted)
    if str(version_id) in ("latest", "-1"):
        return all_versions[-1]
    number = parse_version(version_id)
    for found in all_versions:
        if found.version == number:
            return found
    raise RegistryError(404, 40402, f"Version {version_id} not found.")


def parse_version(version_id: str | int) -> int:
    try:
        number = int(version_id)
    except (TypeError, ValueError):
        number = 0
    if number < 1 or number > 2**31 - 1:
        raise RegistryError(
            422,
            42202,
            f"The specified version '{version_id}' is not a valid version id. Allowed values "
            'are between [1, 2^31-1] and the string "latest"',
        )
    return number


def schema_by_id(team: Team, schema_id: int) -> RegistrySchema:
    """The schema of global id ``schema_id`` when the team registered it (kept after its
    versions are deleted: old messages still carry the id); 40403 otherwise, as for an id
    nobody has, so another team's ids are not learned here."""
    found = RegistrySchema.objects.filter(pk=schema_id, teams=team).first()
    if found is None:
        raise RegistryError(404, 40403, f"Schema {schema_id} not found")
    return found


def versions_of_schema(
    team: Team, schema_id: int, *, deleted: bool = False
) -> list[SubjectVersion]:
    """The versions of the team's subjects that use the schema ``schema_id``."""
    schema_by_id(team, schema_id)
    queryset = SubjectVersion.objects.filter(
        schema_id=schema_id, subject__team=team
    ).select_related("subject")
    if not deleted:
        queryset = queryset.filter(deleted=False)
    return list(queryset.order_by("subject__name", "version"))


def references_text(team: Team, references: list[dict]) -> dict[str, str]:
    """``{name: schema text}`` of each reference (``{name, subject, version}``), a subject of
    the team's."""
    texts: dict[str, str] = {}
    for ref in references:
        if not {"name", "subject", "version"} <= set(ref):
            raise RegistryError(
                422, 42201, "Invalid schema: a reference has name, subject, version"
            )
        try:
            found = version(team, str(ref["subject"]), ref["version"])
        except RegistryError as exc:
            raise RegistryError(
                422, 42201, f"Invalid schema: reference {ref['name']!r}: {exc.message}"
            ) from None
        texts[str(ref["name"])] = found.schema.schema
    return texts


def subject_shape(
    team: Team, name: str, version_id: str | int = "latest", *, message: str = ""
) -> tuple[SubjectVersion, Shape]:
    """A version of subject ``name`` and its shape: the JSON Schema of the payload its wire
    format gives an event (:mod:`console.schemas.shape`; ``message``: a Protobuf message's
    full name). 40401/40402 when there is no such version, 42201 for a message the schema
    does not declare."""
    found = version(team, name, version_id)
    stored = found.schema
    try:
        shape = shape_of(
            stored.schema_type,
            stored.schema,
            references_text(team, list(stored.references)),
            message=message,
        )
    except InvalidSchema as exc:
        raise RegistryError(422, 42201, str(exc)) from exc
    return found, shape
