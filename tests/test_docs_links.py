"""Every relative link in README.md and docs/*.md reaches a file, and every `#anchor` a heading of it (no Ray).

Anchors follow GitHub's slugs: the heading lower-cased, characters other than letters, digits, spaces, `-` and
`_` dropped, spaces turned into `-`, a repeated slug suffixed `-1`, `-2`, ...
"""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LINK = re.compile(r"\]\(([^)\s]+)\)")
FENCE = re.compile(r"^```.*?^```", re.S | re.M)


def slug(heading: str) -> str:
    text = re.sub(r"[`*_]{2,}|`", "", heading.strip()).lower()
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(path: Path) -> set[str]:
    out: dict[str, int] = {}
    found = set()
    for line in FENCE.sub("", path.read_text()).splitlines():
        m = re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
        if not m:
            continue
        s = slug(m.group(1))
        n = out.get(s, 0)
        found.add(s if n == 0 else f"{s}-{n}")
        out[s] = n + 1
    return found


def broken_links(page: Path) -> list[str]:
    bad = []
    for target in LINK.findall(FENCE.sub("", page.read_text())):
        if re.match(r"^[a-z]+:", target):  # http:, https:, mailto:
            continue
        file_part, _, anchor = target.partition("#")
        dest = (page.parent / file_part).resolve() if file_part else page
        if not dest.exists():
            bad.append(f"{page.relative_to(ROOT)}: {target} (no such file)")
        elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
            bad.append(f"{page.relative_to(ROOT)}: {target} (no such heading)")
    return bad


def test_every_doc_link_resolves():
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    bad = [b for page in pages for b in broken_links(page)]
    assert not bad, "broken links:\n" + "\n".join(bad)


def test_the_link_check_catches_a_broken_anchor(tmp_path):
    global ROOT
    page = tmp_path / "a.md"
    (tmp_path / "b.md").write_text("# Title\n## The `league:` section (v2)\n## Dup\n## Dup\n")
    page.write_text("[ok](b.md#the-league-section-v2) [ok2](b.md#dup-1) [bad](b.md#nope) [gone](c.md)\n")
    saved, ROOT = ROOT, tmp_path
    try:
        bad = broken_links(page)
    finally:
        ROOT = saved
    assert bad == ["a.md: b.md#nope (no such heading)", "a.md: c.md (no such file)"]


NOT_GUIDES = {
    "results.md": "the evidence: every measured figure with its command",
    "results_history.md": "the history page",
    "reliability.md": "the record of every bad input and fault tried, round by round (what issue 16 and its followers ask for)",
    "internals.md": "for contributors: how the RLlib glue is wired, not a user's guide",
}
"""Pages that are not user guides, with why; every other page under docs/ is a guide."""


def test_guide_pages_stay_short_and_the_readme_under_150_lines():
    """A guide says what a feature is and how to use it; measurements go to results.md (issue 62: ~300 lines)."""
    long = {p.name: n for p in sorted((ROOT / "docs").glob("*.md"))
            if p.name not in NOT_GUIDES and (n := len(p.read_text().splitlines())) > 300}
    assert not long, f"guide pages over 300 lines (move the evidence to docs/results.md): {long}"
    assert len((ROOT / "README.md").read_text().splitlines()) < 150
