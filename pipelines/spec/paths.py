"""Where files stages and SQLite databases may live: under the configured files roots only.

A path an editor types reaches the file system of the host the drivers run on (as the user
they run as), so it is checked against an allow-list of directories, after normalisation and
symlink resolution, never against a list of bad names:

* ``SLUICE_FILES_ROOTS`` - the directories files sources, files sinks (dead-letter targets
  included), and SQLite databases of the JDBC sink may use: absolute paths separated by
  ``os.pathsep`` (``:``) or commas. Default: the ``data/`` folder of the installation (the
  directory holding the ``pipelines`` package, ``make run``'s working directory). A relative
  path in a config is taken relative to the FIRST root.
* ``SLUICE_FILES_SCHEMES`` - URI schemes other than ``file:`` an operator allows (e.g.
  ``hdfs,s3a``). Locations with such a scheme are passed to Spark unchanged: NO root check
  applies to them (their access control is the remote store's); the operator who allows a
  scheme accepts that any editor may read and write whatever the drivers' credentials reach
  there. Default: none (``file:`` URIs and plain paths only).
* ``SLUICE_VAR_DIR`` (default ``<installation>/var``) and ``SLUICE_CHECKPOINT_ROOT`` (default
  ``<var>/checkpoints``) - Sluice's own state (its SQLite database, Kafka and Redis data,
  every channel's checkpoint). Nothing in them is ever allowed, even when a root contains
  them; the one exception is a root the operator placed strictly inside ``var/`` (the docker
  image keeps its data root in ``/var/lib/sluice/data``): paths under that root are allowed,
  but never inside the checkpoint root.

A team's reach (:mod:`pipelines.spec.reach`) may set its own files roots in place of
``SLUICE_FILES_ROOTS`` while it is in effect; a team with its own roots is refused the schemes
of ``SLUICE_FILES_SCHEMES`` (a remote store has no root to check).

A path is also refused when it holds control characters (NUL, line breaks), a ``..``
segment, or glob characters (``* ? [ ] { }`` and ``\\``; Spark would expand them, so a glob
could reach past what was checked: the files source's ``file_pattern`` filters file names),
or when it resolves into ``/proc``, ``/sys`` or ``/dev``.

Both the spec validation (the console) and the driver, right before it hands the location to
Spark or opens the database, call the same functions: a symlink changed after the spec was
saved is caught when the channel starts. Both processes must get the same environment.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from pipelines.spec.reach import files_roots_given

FILES_ROOTS_ENV = "SLUICE_FILES_ROOTS"
FILES_SCHEMES_ENV = "SLUICE_FILES_SCHEMES"
VAR_DIR_ENV = "SLUICE_VAR_DIR"
CHECKPOINT_ROOT_ENV = "SLUICE_CHECKPOINT_ROOT"

INSTALLATION_DIR = Path(__file__).resolve().parents[2]
"""The directory holding the ``pipelines`` package (the repository root)."""


class PathNotAllowed(ValueError):
    """A path or location is not allowed (a ``ValueError``: a field error in a spec)."""


_SYSTEM_DIRS = (Path("/proc"), Path("/sys"), Path("/dev"))
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_GLOB = re.compile(r"[*?\[\]{}\\]")
_SCHEME = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*):")
_LIST_SEPARATORS = re.compile("[," + re.escape(os.pathsep) + "]")


def files_roots() -> tuple[Path, ...]:
    """The resolved files roots: the team's when the reach in effect sets them
    (:mod:`pipelines.spec.reach`), else this process's environment's (see the module
    docstring).

    Raises ``ValueError`` when an entry of ``SLUICE_FILES_ROOTS`` is not absolute.
    """
    given = files_roots_given()
    if given is not None:
        return tuple(Path(root).resolve() for root in given[1])
    text = os.environ.get(FILES_ROOTS_ENV, "")
    entries = [entry.strip() for entry in _LIST_SEPARATORS.split(text) if entry.strip()]
    if not entries:
        return ((INSTALLATION_DIR / "data").resolve(),)
    roots = []
    for entry in entries:
        if not Path(entry).is_absolute():
            raise ValueError(f"{FILES_ROOTS_ENV}: {entry!r} is not an absolute path")
        roots.append(Path(entry).resolve())
    return tuple(roots)


def files_schemes() -> frozenset[str]:
    """URI schemes besides ``file`` that an operator allows (``SLUICE_FILES_SCHEMES``)."""
    text = os.environ.get(FILES_SCHEMES_ENV, "")
    return frozenset(
        scheme.strip().lower() for scheme in text.split(",") if scheme.strip().lower() != "file"
    ) - {""}


def sluice_dirs() -> tuple[Path, Path]:
    """Sluice's own state: the resolved var directory and checkpoint root."""
    var_dir = Path(os.environ.get(VAR_DIR_ENV) or INSTALLATION_DIR / "var").resolve()
    checkpoints = Path(os.environ.get(CHECKPOINT_ROOT_ENV) or var_dir / "checkpoints").resolve()
    return var_dir, checkpoints


def resolve_local_path(text: str) -> Path:
    """The file-system path ``text`` names, resolved, when it lies under a files root.

    ``text`` is an absolute path or one relative to the first root (no URI). The result has
    every symlink resolved; use it (not ``text``) to open the file. Raises ``ValueError``
    with a message fit for a field error otherwise.
    """
    _check_characters(text)
    if ".." in Path(text).parts:
        raise PathNotAllowed("must not contain '..' segments")
    roots = files_roots()
    path = Path(text)
    if not roots:
        given = files_roots_given()
        team = f"team {given[0].team}'s reach" if given else "the site"
        raise PathNotAllowed(f"no files root is allowed ({team} lists none)")
    resolved = (path if path.is_absolute() else roots[0] / path).resolve()
    for system_dir in _SYSTEM_DIRS:
        if resolved.is_relative_to(system_dir):
            raise PathNotAllowed(
                f"resolves to {resolved}, inside the system directory {system_dir}"
            )
    inside = [root for root in roots if resolved.is_relative_to(root)]
    if not inside:
        shown = ", ".join(str(root) for root in roots) or "none"
        given = files_roots_given()
        if given is not None:
            raise PathNotAllowed(
                f"resolves to {resolved}, outside the files roots of team {given[0].team}'s "
                f"reach ({shown}); a site admin sets them on the team"
            )
        raise PathNotAllowed(
            f"resolves to {resolved}, outside the files roots ({shown}); an operator adds "
            f"roots with {FILES_ROOTS_ENV}"
        )
    var_dir, checkpoints = sluice_dirs()
    if resolved.is_relative_to(checkpoints):
        raise PathNotAllowed(f"resolves to {resolved}, inside Sluice's checkpoints ({checkpoints})")
    nested_root = any(root != var_dir and root.is_relative_to(var_dir) for root in inside)
    if resolved.is_relative_to(var_dir) and not nested_root:
        raise PathNotAllowed(f"resolves to {resolved}, inside Sluice's own state ({var_dir})")
    return resolved


def resolve_files_location(text: str) -> str:
    """The location to hand Spark for a files source or sink path ``text``.

    A plain path or a ``file:`` URI (``file:///data/in``, ``file:/data/in``) becomes
    ``file://`` + :func:`resolve_local_path` (explicitly ``file:``, so a cluster's default
    file system cannot re-interpret it). A URI whose scheme ``SLUICE_FILES_SCHEMES`` allows
    is returned unchanged, unchecked beyond its characters. Raises ``ValueError`` otherwise.
    """
    _check_characters(text)
    scheme = _SCHEME.match(text)
    if scheme is None:
        return f"file://{resolve_local_path(text)}"
    name = scheme.group(1).lower()
    if name == "file":
        return f"file://{resolve_local_path(_file_uri_path(text))}"
    if name in files_schemes():
        given = files_roots_given()
        if given is not None:
            # The team's roots bound its files; a remote store's would not be.
            raise PathNotAllowed(
                f"{name}: locations are not allowed: team {given[0].team}'s reach sets its "
                "files roots, so its files stages use paths under them only"
            )
        return text
    raise PathNotAllowed(
        f"{name}: locations are not allowed: give a path or a file: URI under the files roots "
        f"(an operator allows other schemes with {FILES_SCHEMES_ENV})"
    )


def recheck_files_location(text: str, stage: str) -> str:
    """:func:`resolve_files_location` for a driver about to use ``text``: the refusal
    (:class:`PathNotAllowed`) names the stage and the path."""
    try:
        return resolve_files_location(text)
    except PathNotAllowed as error:
        raise PathNotAllowed(f"{stage}: path {text!r} {error}") from None


def _file_uri_path(text: str) -> str:
    """The absolute path of ``file:/p``, ``file:///p`` or ``file://localhost/p`` (taken
    literally, as Hadoop does: no percent-decoding)."""
    rest = text[len("file:") :]
    if rest.startswith("//"):
        authority, slash, path = rest[2:].partition("/")
        if authority.lower() not in ("", "localhost"):
            raise PathNotAllowed(f"a file: URI must not name a host ({authority!r})")
        rest = slash + path
    if "#" in rest:
        raise PathNotAllowed("a file: URI must not have a fragment")
    if not rest.startswith("/"):
        raise PathNotAllowed("a file: URI must hold an absolute path: file:///path/to/dir")
    return rest


def _check_characters(text: str) -> None:
    if not text:
        raise PathNotAllowed("must not be empty")
    if _CONTROL.search(text):
        raise PathNotAllowed("must not contain control characters (NUL, line breaks, tabs)")
    if _GLOB.search(text):
        raise PathNotAllowed(
            "must not contain glob characters (* ? [ ] { } \\): name a directory; the files "
            "source's file_pattern filters file names"
        )
