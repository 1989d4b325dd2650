"""Every figure the README's Results section quotes has its home in docs/results.md (no Ray)."""

import re
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# A figure: digits with optional thousands commas and decimals (4,862; 0.69; 5.4x reads as 5.4).
FIGURE = re.compile(r"(?<![\w.])-?\d+(?:,\d{3})*(?:\.\d+)?")


def _section(text: str, heading: str) -> str:
    start = text.index(heading)
    nxt = text.find("\n## ", start + len(heading))
    return text[start : nxt if nxt != -1 else len(text)]


def _figures(text: str) -> set[str]:
    # Links and anchors hold numbers that are no figures (#...-session-16, league_claimpy).
    text = re.sub(r"\]\([^)]*\)", "]", text)
    return {m.group(0).lstrip("-") for m in FIGURE.finditer(text)}


def _rounded(figure: str, decimals: int) -> str:
    step = Decimal(1).scaleb(-decimals)
    return str(Decimal(figure.replace(",", "")).quantize(step, rounding=ROUND_HALF_UP))


def _at_home(figure: str, home: set[str]) -> bool:
    """The figure, or a more precise one in results.md that rounds to it (README 0.90 for 0.897)."""
    if figure in home:
        return True
    decimals = len(figure.split(".")[1]) if "." in figure else 0
    if decimals == 0:
        return False
    plain = figure.replace(",", "")
    return any(
        "." in h and len(h.split(".")[1]) > decimals and _rounded(h, decimals) == plain for h in home
    )


def test_readme_results_figures_appear_in_results_md():
    readme = (ROOT / "README.md").read_text()
    results = (ROOT / "docs" / "results.md").read_text()
    home = _figures(results)
    quoted = _figures(_section(readme, "## Results"))
    quoted |= _figures(readme[readme.index("The demo trains **") : readme.index("see Results.")])
    missing = sorted(f for f in quoted if not _at_home(f, home))
    assert not missing, f"figures in README.md but not in docs/results.md: {missing}"


def test_the_check_catches_a_figure_missing_from_results_md():
    assert "4,863" not in _figures("at 4,862 env steps/s")
    assert {"0.69", "0.65", "0.74"} <= _figures("**0.69 [0.65, 0.74]**")
    assert "16" not in _figures("[history](results_history.md#the-demo-session-16)")
    assert _at_home("0.90", {"0.897"}) and _at_home("0.55", {"0.545"})
    assert not _at_home("0.91", {"0.897"}) and not _at_home("4,862", {"4,863", "4862.0"})
