"""Every performance figure the docs claim names the results file it comes from, and that file
exists: each row of docs/performance.md's tables that holds a figure carries its results path in
the `Results` column, and every bench/results/... path cited in README.md or docs/ is there."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PERFORMANCE = ROOT / "docs" / "performance.md"
CITED = re.compile(r"bench/results/[\w./<>*-]*[\w/>*]")
FIGURE = re.compile(r"\d")
PLACEHOLDER = re.compile(r"[<*]|^[A-Z_]+(\.\w+)?$")


def tables(text: str) -> list[list[list[str]]]:
    """The Markdown tables of TEXT, each a list of rows of cells (header first, no separator)."""
    found, rows = [], []
    for line in text.splitlines() + [""]:
        if line.lstrip().startswith("|"):
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if not all(re.fullmatch(r":?-+:?", c) for c in cells if c):
                rows.append(cells)
        elif rows:
            found.append(rows)
            rows = []
    return found


def missing(path: str, root: Path) -> bool:
    """A cited path that is not there; one with a placeholder (<date>, *, NAME) counts as there
    when the folder before its first placeholder is."""
    parts = Path(path).parts
    fixed = next((i for i, p in enumerate(parts) if PLACEHOLDER.search(p)), len(parts))
    return not (root.joinpath(*parts[:fixed])).exists()


def unbacked_rows(text: str, root: Path) -> list[str]:
    """Why each table row of a performance page with a figure fails to name an existing results file."""
    problems = []
    for table in tables(text):
        header, body = table[0], table[1:]
        column = next((i for i, h in enumerate(header) if h.strip("*` ").lower() == "results"), None)
        for row in body:
            figures = [c for i, c in enumerate(row) if i != column and FIGURE.search(c)]
            if not figures:
                continue
            if column is None:
                problems.append(f"a table without a Results column holds figures: {' | '.join(row)}")
                continue
            cell = row[column] if column < len(row) else ""
            paths = re.findall(r"`(bench/results/[^`]+)`", cell)
            if not paths:
                problems.append(f"no results file named: {' | '.join(row)}")
            problems += [f"{p} does not exist (row: {' | '.join(row)})" for p in paths
                         if missing(p, root)]
    return problems


SAMPLE = """# Performance

| what | figure | Results |
|---|---|---|
| throughput, 8 clients | 1.2× llama-server | `bench/results/throughput/latest.json` |
| start-up | 0.9 s | `bench/results/startup/latest.json` |
| soak | no leak in 30 minutes | `bench/results/soak/latest.json`, `bench/results/soak/latest.png` |
| grammar | fast | |

| memory | figure |
|---|---|
| runner RSS | 370 MiB |

Prose with a figure (3 s) is not a table row.
"""


def test_the_checker_flags_rows_without_a_results_file_or_with_a_missing_one(tmp_path):
    for name in ("throughput", "soak"):
        (tmp_path / "bench" / "results" / name).mkdir(parents=True)
        (tmp_path / "bench" / "results" / name / "latest.json").write_text("{}")
    (tmp_path / "bench" / "results" / "soak" / "latest.png").write_bytes(b"")
    problems = unbacked_rows(SAMPLE, tmp_path)
    assert problems == [
        "bench/results/startup/latest.json does not exist (row: start-up | 0.9 s | "
        "`bench/results/startup/latest.json`)",
        "a table without a Results column holds figures: runner RSS | 370 MiB",
    ]
    # a row with no figure needs no file; one whose figure lacks a file is named
    assert unbacked_rows(SAMPLE.replace("| fast |", "| 2 ms |"), tmp_path)[1].startswith(
        "no results file named: grammar | 2 ms")


def test_placeholders_count_as_there_when_their_folder_is(tmp_path):
    (tmp_path / "bench" / "results" / "soak").mkdir(parents=True)
    assert not missing("bench/results/soak/<date>-<commit>.json", tmp_path)
    assert missing("bench/results/startup/<date>-<commit>.json", tmp_path)
    assert missing("bench/results/soak/latest.json", tmp_path)
    assert not missing("bench/results/NAME/latest.json", tmp_path)


def test_every_figure_in_docs_performance_names_a_results_file_that_exists():
    assert PERFORMANCE.is_file(), "docs/performance.md is missing"
    text = PERFORMANCE.read_text(encoding="utf-8")
    assert any(FIGURE.search(" ".join(r)) for t in tables(text) for r in t[1:]), \
        "docs/performance.md holds no table of figures"
    assert unbacked_rows(text, ROOT) == []


@pytest.mark.parametrize("doc", [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))],
                         ids=lambda p: p.name)
def test_every_results_path_the_docs_cite_exists(doc):
    cited = sorted(set(CITED.findall(doc.read_text(encoding="utf-8"))))
    assert [p for p in cited if missing(p, ROOT)] == []
