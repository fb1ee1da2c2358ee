"""
The guides: README.md stays a short guide that links every page of docs/,
and every relative link and every path of the tree that the guides name
leads somewhere that exists.
"""

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
GUIDES = [REPO / "README.md", REPO / "CONTRIBUTING.md", *sorted((REPO / "docs").glob("*.md"))]
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
TREE_PATH = re.compile(r"`((?:src|tests|docs|data|notebooks)/[^`\s*<>]*)`")


def anchors(path):
    """The anchors of a Markdown file's headings, as GitHub makes them."""
    found = set()
    for line in path.read_text(encoding="utf-8").splitlines():
        heading = re.match(r"^#+\s+(.*)$", line)
        if heading:
            words = re.sub(r"[^\w\- ]", "", heading.group(1).strip().lower())
            found.add(words.replace(" ", "-"))
    return found


def relative_links(path):
    """(target file, anchor or None) of each relative link in a Markdown file."""
    for target in LINK.findall(path.read_text(encoding="utf-8")):
        if re.match(r"^[a-z]+:", target):
            continue
        file, _, anchor = target.partition("#")
        yield (path.parent / file).resolve() if file else path, anchor or None


@pytest.mark.parametrize("guide", GUIDES, ids=lambda path: str(path.relative_to(REPO)))
def test_every_relative_link_leads_to_a_file_and_heading_that_exist(guide):
    for target, anchor in relative_links(guide):
        assert target.exists(), f"{guide.name} links to {target}, which does not exist"
        if anchor:
            assert anchor in anchors(target), f"{guide.name} links to #{anchor}, not a heading of {target.name}"


@pytest.mark.parametrize("guide", GUIDES, ids=lambda path: str(path.relative_to(REPO)))
def test_every_path_of_the_tree_a_guide_names_exists(guide):
    for named in TREE_PATH.findall(guide.read_text(encoding="utf-8")):
        path = named.split("::")[0].rstrip(".,:;")
        assert (REPO / path).exists(), f"{guide.name} names {named}, which is not in the tree"


def test_the_readme_is_a_short_guide_that_links_every_page_of_docs():
    readme = REPO / "README.md"
    assert len(readme.read_text(encoding="utf-8").splitlines()) <= 250
    linked = {target for target, _ in relative_links(readme)}
    assert {page.resolve() for page in (REPO / "docs").glob("*.md")} <= linked
    assert (REPO / "CONTRIBUTING.md").resolve() in linked


def where_to_change_what(lines):
    """(index of its header line, its rows as (to change, edit)) of the README's table "to change | edit"."""
    header = next(index for index, line in enumerate(lines) if re.match(r"^\|\s*to change\s*\|\s*edit\s*\|$", line))
    rows = []
    for line in lines[header + 2:]:
        if not line.startswith("|"):
            break
        rows.append(tuple(cell.strip() for cell in line.strip().strip("|").split("|")))
    return header, rows


def named_paths(cell):
    """The paths of the tree a table cell names: its relative links' files, and its code spans of one word
    with a slash or a file's ending."""
    spans = [span for span in re.findall(r"`([^`\s]+)`", cell)
             if re.fullmatch(r"[\w.-]+(/[\w.-]*)*", span) and ("/" in span or re.search(r"\.(py|md|sh|txt|yml)$", span))]
    links = [target.partition("#")[0] for target in LINK.findall(cell) if not re.match(r"^[a-z]+:", target)]
    return [path.rstrip("/") for path in spans + links if path]


def test_the_readme_opens_with_the_smoke_run_and_where_to_change_what():
    """A newcomer meets, within the README's first 40 lines, a run to try and the whole table of where to
    change what; every path that table names is in the tree."""
    lines = (REPO / "README.md").read_text(encoding="utf-8").splitlines()
    first = "\n".join(lines[:40])
    assert "SMALL=1 ./run.sh vanilla_finetune_without_pretrain" in first
    assert "SMALL=1 ./run.sh vanilla_eval_dev_without_pretrain" in first
    header, rows = where_to_change_what(lines)
    assert header + 2 + len(rows) <= 40, "the table of where to change what should end within the first 40 lines"
    assert len(rows) >= 6 and all(len(row) == 2 and all(row) for row in rows)
    for change, edit in rows:
        assert named_paths(edit), f"the row '{change}' names no path"
        for path in named_paths(edit):
            assert (REPO / path).exists(), f"the README says to change {change} in {path}, which is not in the tree"


def test_the_anchor_maker_and_the_link_reader_find_what_they_should(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("# A page\n\n## Why 85% agreement\n\nSee [x](other.md#part-two), [y](#why-85-agreement),"
                    " [z](https://example.org/a) and `src/run.py`.\n", encoding="utf-8")
    assert anchors(page) == {"a-page", "why-85-agreement"}
    assert list(relative_links(page)) == [(tmp_path / "other.md", "part-two"), (page, "why-85-agreement")]
    assert TREE_PATH.findall(page.read_text(encoding="utf-8")) == ["src/run.py"]


def test_the_table_reader_finds_the_rows_and_the_paths_they_name():
    lines = ["# A", "", "| to change | edit |", "| --- | --- |", "| a test | `grader.py` (`@graded`) |",
             "| data | `data/`, `./run.sh release --tests DIR`, a thresholds.json, `--test-labels FILE` ([how](docs/a.md#b)) |",
             "", "| x |"]
    header, rows = where_to_change_what(lines)
    assert header == 2 and [change for change, _ in rows] == ["a test", "data"]
    assert named_paths(rows[0][1]) == ["grader.py"] and named_paths(rows[1][1]) == ["data", "docs/a.md"]
