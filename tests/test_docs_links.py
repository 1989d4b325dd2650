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
