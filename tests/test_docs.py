"""The README and docs/ link to files and sections that exist (a moved page or a renamed heading
would leave a dead link on the repository's front page)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", ROOT / "benchmarks" / "RESULTS.md", *sorted((ROOT / "docs").glob("*.md"))]
LINK = re.compile(r"\]\(([^)\s]+)\)")


def anchors(page: Path) -> set[str]:
    """GitHub's heading anchors: lower case, punctuation dropped, spaces to hyphens."""
    out, fence = set(), False
    for line in page.read_text(encoding="utf-8").splitlines():
        if line.startswith("```"):
            fence = not fence
        elif not fence and line.startswith("#"):
            title = line.lstrip("#").strip().lower()
            out.add(re.sub(r"[^\w\- ]", "", title).replace(" ", "-"))
    return out


def test_every_relative_link_resolves() -> None:
    dead = []
    for page in PAGES:
        for target in LINK.findall(page.read_text(encoding="utf-8")):
            if target.startswith(("http://", "https://", "mailto:")):
                continue
            path, _, fragment = target.partition("#")
            file = (page.parent / path).resolve() if path else page
            if not file.exists():
                dead.append(f"{page.relative_to(ROOT)}: {target}")
            elif fragment and file.suffix == ".md" and fragment not in anchors(file):
                dead.append(f"{page.relative_to(ROOT)}: {target} (no such heading)")
    assert not dead, dead


def test_the_readme_is_a_front_door() -> None:
    # the manual lives in docs/, the dated measurements in benchmarks/RESULTS.md
    assert len((ROOT / "README.md").read_text(encoding="utf-8").splitlines()) <= 150


def test_generated_tables_are_current() -> None:
    from flows.cli.docs import TABLES, stale_pages

    assert not stale_pages(), "run: python -m flows.cli.docs"
    pages = "".join(p.read_text(encoding="utf-8") for p in (ROOT / "docs").glob("*.md"))
    assert all(f"<!-- generated: {name} -->" in pages for name in TABLES)


def test_every_assertion_type_documents_itself() -> None:
    from graders.registry import ASSERTIONS

    assert not [name for name, spec in ASSERTIONS.items() if not spec.summary]
