"""Files paths resolve under the files roots only (issue 12, finding 3).

Every path of the finding is refused with a field error on the exact stage (source, sink,
dead-letter sink), allowed paths pass, and the drivers' builders check again before Spark
gets the path (a symlink changed after the spec was saved). No Spark: the builders refuse
before they touch it.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from pipelines.sinks.files import write_files, write_files_batch
from pipelines.sources.files import parquet_schema, read_files
from pipelines.spec import SpecError, validate_spec
from pipelines.spec.configs import FilesSinkConfig, FilesSourceConfig
from pipelines.spec.paths import (
    CHECKPOINT_ROOT_ENV,
    FILES_ROOTS_ENV,
    FILES_SCHEMES_ENV,
    INSTALLATION_DIR,
    VAR_DIR_ENV,
    PathNotAllowed,
    files_roots,
    recheck_files_location,
    resolve_files_location,
    resolve_local_path,
)


@pytest.fixture
def layout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """``tmp_path`` as an installation: files root ``data/``, Sluice's state in ``var/``."""
    (tmp_path / "data" / "inbox").mkdir(parents=True)
    (tmp_path / "var" / "checkpoints" / "other-channel").mkdir(parents=True)
    (tmp_path / "var" / "sluice.sqlite3").write_text("")
    monkeypatch.setenv(FILES_ROOTS_ENV, str(tmp_path / "data"))
    monkeypatch.setenv(VAR_DIR_ENV, str(tmp_path / "var"))
    monkeypatch.delenv(CHECKPOINT_ROOT_ENV, raising=False)
    monkeypatch.delenv(FILES_SCHEMES_ENV, raising=False)
    return tmp_path


def spec_with(path: str, where: str) -> dict[str, Any]:
    files = {"type": "files", "config": {"path": path, "format": "jsonl"}}
    spec: dict[str, Any] = {
        "source": {"type": "generator", "config": {}},
        "sink": {"type": "preview", "config": {}},
    }
    if where == "source":
        spec["source"] = files
    elif where == "sink":
        spec["sink"] = files
    else:
        spec["errors"] = {"tolerance": "all", "dead_letter": files}
    return spec


FIELDS = {
    "source": "source.config.path",
    "sink": "sink.config.path",
    "dead_letter": "errors.dead_letter.config.path",
}


def field_errors(path: str, where: str) -> list[str]:
    with pytest.raises(SpecError) as raised:
        validate_spec(spec_with(path, where))
    assert list(raised.value.errors) == [FIELDS[where]], raised.value.errors
    return raised.value.errors[FIELDS[where]]


# -- the paths of the finding, exactly as written there -------------------------------------


@pytest.mark.parametrize("where", list(FIELDS))
@pytest.mark.parametrize(
    ("path", "message"),
    [
        ("/etc", "resolves to /etc, outside the files roots"),
        ("../../", "must not contain '..' segments"),
        ("/proc/self", "inside the system directory /proc"),
        ("file:///etc", "resolves to /etc, outside the files roots"),
        ("hdfs://namenode:8020/etc", "hdfs: locations are not allowed"),
        ("s3a://bucket/secrets", "s3a: locations are not allowed"),
        ("http://169.254.169.254/latest/", "http: locations are not allowed"),
    ],
)
def test_the_findings_paths_are_refused(layout: Path, where: str, path: str, message: str) -> None:
    [error] = field_errors(path, where)
    assert message in error, error


@pytest.mark.parametrize("where", list(FIELDS))
@pytest.mark.parametrize(
    "inside_var",
    [
        "var",
        "var/sluice.sqlite3",
        "var/checkpoints/other-channel",
        "var/checkpoints/other-channel/",
    ],
)
def test_sluices_own_var_is_refused_even_under_a_root(
    layout: Path, monkeypatch: pytest.MonkeyPatch, where: str, inside_var: str
) -> None:
    """The console's var/ and another channel's checkpoint folder: outside the default root,
    and refused too when an operator makes a root that holds var/ (here the whole tree)."""
    [error] = field_errors(str(layout / inside_var), where)
    assert "outside the files roots" in error, error

    monkeypatch.setenv(FILES_ROOTS_ENV, str(layout))
    [error] = field_errors(str(layout / inside_var), where)
    assert f"inside Sluice's checkpoints ({layout / 'var' / 'checkpoints'})" in error or (
        f"inside Sluice's own state ({layout / 'var'})" in error
    ), error
    [error] = field_errors(f"file://{layout}/{inside_var}", where)
    assert "inside Sluice's" in error, error


def test_a_relative_path_cannot_reach_var_either(
    layout: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(FILES_ROOTS_ENV, str(layout))
    assert "inside Sluice's" in field_errors("var/checkpoints/other-channel", "source")[0]


@pytest.mark.parametrize("where", list(FIELDS))
def test_a_symlink_inside_a_root_pointing_outside_is_refused(layout: Path, where: str) -> None:
    (layout / "data" / "etc").symlink_to("/etc")
    (layout / "data" / "state").symlink_to(layout / "var")
    [error] = field_errors(str(layout / "data" / "etc"), where)
    assert "resolves to /etc, outside the files roots" in error, error
    [error] = field_errors("state/checkpoints", where)  # relative: under the first root
    assert "outside the files roots" in error, error


@pytest.mark.parametrize(
    ("path", "message"),
    [
        ("inbox\n", "must not contain control characters"),
        ("in\x00box", "must not contain control characters"),
        ("inbox/../../../etc", "must not contain '..' segments"),
        ("{.}./{.}./etc", "must not contain glob characters"),  # Hadoop would expand to ../../
        ("in*", "must not contain glob characters"),
        ("file://evil.example/data", "must not name a host"),
        ("file:relative", "must hold an absolute path"),
        ("ftp://host/x", "ftp: locations are not allowed"),
    ],
)
def test_other_tricks_are_refused(layout: Path, path: str, message: str) -> None:
    [error] = field_errors(path, "source")
    assert message in error, error


# -- allowed paths -----------------------------------------------------------------------


def test_paths_under_a_root_are_accepted(layout: Path) -> None:
    inbox = layout / "data" / "inbox"
    for path in (str(inbox), f"file://{inbox}", f"file:{inbox}", "inbox", "new/outbox"):
        for where in FIELDS:
            validate_spec(spec_with(path, where))
    assert FilesSourceConfig(path="inbox").path == "inbox"  # stored as typed
    assert resolve_files_location("inbox") == f"file://{inbox}"
    assert resolve_local_path(str(layout / "data")) == layout / "data"  # the root itself


def test_a_symlink_that_stays_under_a_root_is_followed(layout: Path) -> None:
    (layout / "data" / "latest").symlink_to(layout / "data" / "inbox")
    assert resolve_files_location("latest") == f"file://{layout / 'data' / 'inbox'}"


def test_several_roots_and_the_first_takes_relative_paths(
    layout: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    other = layout / "other"
    monkeypatch.setenv(FILES_ROOTS_ENV, f"{other}{os.pathsep}{layout / 'data'}")
    assert files_roots() == (other, layout / "data")
    assert resolve_local_path("x") == other / "x"
    assert resolve_local_path(str(layout / "data" / "inbox")) == layout / "data" / "inbox"
    monkeypatch.setenv(FILES_ROOTS_ENV, f"{layout / 'data'}, {other}")
    assert resolve_local_path("x") == layout / "data" / "x"


def test_a_root_must_be_absolute(layout: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(FILES_ROOTS_ENV, "data")
    with pytest.raises(ValueError, match="'data' is not an absolute path"):
        files_roots()


def test_the_default_root_is_the_installations_data_folder(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv(FILES_ROOTS_ENV)
    monkeypatch.delenv(VAR_DIR_ENV, raising=False)
    assert files_roots() == ((INSTALLATION_DIR / "data").resolve(),)
    assert (INSTALLATION_DIR / "pipelines" / "spec" / "paths.py").is_file()
    assert resolve_local_path("inbox") == (INSTALLATION_DIR / "data" / "inbox").resolve()
    with pytest.raises(PathNotAllowed, match="outside the files roots"):
        resolve_local_path(str(INSTALLATION_DIR / "var" / "sluice.sqlite3"))


def test_a_root_an_operator_puts_inside_var_is_allowed_but_not_the_checkpoints(
    layout: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The docker image keeps its files root in /var/lib/sluice/data, inside its var dir."""
    monkeypatch.setenv(FILES_ROOTS_ENV, f"{layout / 'var' / 'data'},{layout / 'var'}")
    assert resolve_local_path("out") == layout / "var" / "data" / "out"
    with pytest.raises(PathNotAllowed, match="inside Sluice's own state"):
        resolve_local_path(str(layout / "var" / "sluice.sqlite3"))
    monkeypatch.setenv(FILES_ROOTS_ENV, str(layout / "var" / "checkpoints"))
    with pytest.raises(PathNotAllowed, match="inside Sluice's checkpoints"):
        resolve_local_path("other-channel")


def test_a_checkpoint_root_outside_var_is_refused_too(
    layout: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(CHECKPOINT_ROOT_ENV, str(layout / "data" / "checkpoints"))
    [error] = field_errors("checkpoints/other-channel", "sink")
    assert "inside Sluice's checkpoints" in error, error


def test_an_operator_may_allow_other_schemes_unchecked(
    layout: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(FILES_SCHEMES_ENV, "hdfs, S3A")
    for path in ("hdfs://namenode:8020/etc", "s3a://bucket/secrets"):
        validate_spec(spec_with(path, "sink"))
        assert resolve_files_location(path) == path
    assert "http: locations are not allowed" in field_errors("http://h/x", "sink")[0]
    assert "must not contain control characters" in field_errors("hdfs://n/x\ny", "sink")[0]


# -- the drivers check again, right before Spark gets the path ---------------------------------


def test_the_builders_refuse_a_symlink_changed_after_validation(layout: Path) -> None:
    link = layout / "data" / "incoming"
    link.symlink_to(layout / "data" / "inbox")
    source = FilesSourceConfig(path="incoming")
    sink = FilesSinkConfig(path="incoming", format="jsonl")
    parquet = FilesSourceConfig(path="incoming", format="parquet")
    assert recheck_files_location("incoming", "files source").endswith("/data/inbox")

    link.unlink()
    link.symlink_to("/etc")  # swapped by someone with access to the host
    no_spark: Any = None  # each builder refuses before touching Spark
    for build in (
        lambda: read_files(no_spark, source),
        lambda: parquet_schema(no_spark, parquet),
        lambda: write_files(no_spark, sink),
        lambda: write_files_batch(no_spark, sink, 0),
    ):
        with pytest.raises(PathNotAllowed, match=r"'incoming' resolves to /etc, outside"):
            build()


def test_the_builders_refuse_a_config_that_skipped_validation(layout: Path) -> None:
    source = FilesSourceConfig.model_construct(path="/etc", format="csv")
    with pytest.raises(PathNotAllowed, match=r"files source: path '/etc' resolves to /etc"):
        read_files(None, source)  # type: ignore[arg-type]
    sink = FilesSinkConfig.model_construct(path=str(layout / "var"), format="jsonl")
    with pytest.raises(PathNotAllowed, match=r"files sink: path .* outside the files roots"):
        write_files_batch(None, sink, 0)  # type: ignore[arg-type]
