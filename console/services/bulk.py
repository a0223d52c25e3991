"""Fast bulk writes for the control loop.

``QuerySet.bulk_update`` builds one ``CASE WHEN`` expression per row and field in
Python, which costs seconds for a few thousand rows; the control loop rewrites
that many task rows every pass. One parametrised ``UPDATE … WHERE pk = %s`` sent
with ``executemany`` does the same work in milliseconds on SQLite and PostgreSQL.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, cast

from django.db import connections, models, router


def update_rows(
    model: type[models.Model], objs: Iterable[models.Model], fields: Sequence[str]
) -> int:
    """Write ``fields`` of each of ``objs`` (saved instances) by primary key.

    Values go through each field's ``get_db_prep_save``, as ``save()`` would; no
    signals are sent and ``auto_now`` fields are not touched. Returns the number of rows sent.
    """
    objs = list(objs)
    if not objs:
        return 0
    meta = model._meta
    # ``fields`` name concrete fields (never the reverse side of a relation); the stubs type a
    # column ``str | None`` (unset until a field joins its model), set for each field here.
    columns = [cast("models.Field[Any, Any]", meta.get_field(name)) for name in fields]
    connection = connections[router.db_for_write(model)]
    quote = connection.ops.quote_name
    assignments = ", ".join(f"{quote(cast(str, field.column))} = %s" for field in columns)
    pk_column = cast(str, meta.pk.column)
    sql = f"UPDATE {quote(meta.db_table)} SET {assignments} WHERE {quote(pk_column)} = %s"
    rows = [
        [field.get_db_prep_save(getattr(obj, field.attname), connection) for field in columns]
        + [obj.pk]
        for obj in objs
    ]
    with connection.cursor() as cursor:
        cursor.executemany(sql, rows)
    return len(rows)
