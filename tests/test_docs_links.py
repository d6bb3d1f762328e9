"""Every relative link and image in README.md, CHANGELOG.md and docs/*.md points at a file that
exists, and a link to a heading (`file.md#heading`) at a heading that exists, as GitHub renders
the page."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", ROOT / "CHANGELOG.md", *sorted((ROOT / "docs").glob("*.md"))]
LINK = re.compile(r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
FENCE = re.compile(r"^(```|~~~).*?^\1", re.S | re.M)
EXTERNAL = re.compile(r"^[a-z][a-z0-9+.-]*:", re.I)


def links(text: str) -> list[str]:
    """The link targets of a Markdown text, outside fenced code blocks and inline code."""
    prose = FENCE.sub("", text)
    prose = re.sub(r"`[^`\n]*`", "", prose)
    return LINK.findall(prose)


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[`*_]", "", heading.strip()).lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(text: str) -> set[str]:
    seen: dict[str, int] = {}
    found = set()
    for line in FENCE.sub("", text).splitlines():
        match = re.match(r"#{1,6}\s+(.*?)\s*#*\s*$", line)
        if match:
            base = slug(match.group(1))
            count = seen.get(base, 0)
            seen[base] = count + 1
            found.add(base if count == 0 else f"{base}-{count}")
    return found


def broken(doc: Path) -> list[str]:
    problems = []
    text = doc.read_text(encoding="utf-8")
    for target in links(text):
        if EXTERNAL.match(target):
            continue
        path_part, _, fragment = target.partition("#")
        path = (doc.parent / path_part).resolve() if path_part else doc
        if not path.exists():
            problems.append(f"{target}: no such file")
        elif fragment and path.suffix == ".md" and fragment not in anchors(path.read_text(encoding="utf-8")):
            problems.append(f"{target}: no heading '#{fragment}' in {path.name}")
    return problems


def test_the_checker_sees_links_anchors_and_ignores_code(tmp_path):
    (tmp_path / "other.md").write_text("# Which file\n\n## Semantic conditions: `routes[].match`\n")
    doc = tmp_path / "page.md"
    doc.write_text("[ok](other.md#which-file) [ok2](other.md#semantic-conditions-routesmatch)\n"
                   "![pic](missing.png) [bad anchor](other.md#nowhere) [web](https://example.com)\n"
                   "`[not a link](nope.md)`\n```\n[nor this](nope2.md)\n```\n")
    assert broken(doc) == ["missing.png: no such file", "other.md#nowhere: no heading '#nowhere' in other.md"]


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_resolves(doc):
    assert broken(doc) == []
