"""No module of the data plane, the console's services or its API grows past 600 lines: one past
that size carries more than one concern, and every reader has to cross all of them. Tables of
data are the exception (they are long because the data is): each is named here with why."""

from __future__ import annotations

from pathlib import Path

MAX_LINES = 600

REPO = Path(__file__).resolve().parents[2]
CHECKED = ("pipelines", "console/services", "console/api")

TABLES = {
    "pipelines/spec/sql_functions.py": "the SQL allow-list: Spark's built-in functions by family",
}


def module_lines() -> dict[str, int]:
    """Each module of the checked packages (its path in the repository) -> its number of lines."""
    return {
        path.relative_to(REPO).as_posix(): len(path.read_text(encoding="utf-8").splitlines())
        for package in CHECKED
        for path in sorted((REPO / package).rglob("*.py"))
        if "migrations" not in path.parts
    }


def test_no_module_is_over_600_lines_but_the_tables_of_data() -> None:
    sizes = module_lines()
    for found in ("pipelines/bus/router.py", "console/services/channels.py", "console/api/urls.py"):
        assert found in sizes  # the walk finds them
    over = {name: lines for name, lines in sizes.items() if lines > MAX_LINES}
    assert {name: lines for name, lines in over.items() if name not in TABLES} == {}


def test_every_table_excepted_is_still_there() -> None:
    """An exception outlives its module only by mistake: a table moved or split is removed."""
    sizes = module_lines()
    assert {name for name in TABLES if name not in sizes} == set()
