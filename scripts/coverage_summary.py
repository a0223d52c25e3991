"""Print the coverage of each package, line and branch, from coverage.py's JSON report.

Usage: python scripts/coverage_summary.py COVERAGE_JSON

scripts/test.sh (make test) writes the JSON report after combining its parts' data; this
prints the table it ends with (Markdown, so that it can be pasted into docs/testing.md as is).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

PACKAGES = ("console", "pipelines", "runtime_adapter")


def package_totals(files: dict[str, dict], package: str) -> dict[str, int]:
    """Statements and branches of ``package``'s files, and how many of each ran."""
    totals = {"statements": 0, "covered_lines": 0, "branches": 0, "covered_branches": 0}
    for path, report in files.items():
        if path.split("/", 1)[0] != package:
            continue
        summary = report["summary"]
        totals["statements"] += summary["num_statements"]
        totals["covered_lines"] += summary["covered_lines"]
        totals["branches"] += summary["num_branches"]
        totals["covered_branches"] += summary["covered_branches"]
    return totals


def percent(part: int, whole: int) -> str:
    return f"{100 * part / whole:.1f} %" if whole else "n/a"


def row(name: str, totals: dict[str, int]) -> str:
    lines = percent(totals["covered_lines"], totals["statements"])
    branches = percent(totals["covered_branches"], totals["branches"])
    return (
        f"| {name} | {lines} | {branches} | "
        f"{totals['covered_lines']:,} of {totals['statements']:,} | "
        f"{totals['covered_branches']:,} of {totals['branches']:,} |"
    )


def summary(report: dict) -> str:
    """The Markdown table: one row per package, then all of them."""
    by_package = {package: package_totals(report["files"], package) for package in PACKAGES}
    everything = {
        key: sum(totals[key] for totals in by_package.values())
        for key in ("statements", "covered_lines", "branches", "covered_branches")
    }
    return "\n".join(
        [
            "| package | lines | branches | lines run | branches taken |",
            "|---|---:|---:|---:|---:|",
            *(row(package, totals) for package, totals in by_package.items()),
            row("**all**", everything),
        ]
    )


def main() -> None:
    print(summary(json.loads(Path(sys.argv[1]).read_text())))


if __name__ == "__main__":
    main()
