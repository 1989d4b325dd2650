"""bench/figures.py draws every headline figure from the committed bench data (no Ray, nothing trains)."""

import struct
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench import figures  # noqa: E402


def _png_size(path: Path) -> tuple[int, int]:
    head = path.read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n", f"{path} is not a PNG"
    return struct.unpack(">II", head[16:24])


def test_every_figure_is_drawn_from_the_committed_data(tmp_path):
    paths = figures.make_figures(ROOT / "bench" / "data", tmp_path)
    assert sorted(p.name for p in paths) == sorted(f"{name}.png" for name in figures.FIGURES)
    for p in paths:
        width, height = _png_size(p)
        assert width >= 800 and height >= 350, (p.name, width, height)
        assert p.stat().st_size > 30_000, f"{p.name} is nearly empty ({p.stat().st_size} bytes)"


def test_the_figures_read_what_results_md_quotes():
    # The numbers a figure draws are the committed data's, the same docs/results.md quotes.
    rows = {label: (mean, low, high) for label, mean, low, high, _, _ in figures.league_rows(ROOT / "bench" / "data")}
    mean, low, high = rows["Leduc: exploitability, PSRO's Nash mixture - mirror's average"]
    assert (round(mean, 3), round(low, 3), round(high, 3)) == (-0.047, -0.065, -0.028)
    curves = figures.poker_curves(ROOT / "bench" / "data", "league_claim_leduc_10m")
    xs, mean, low, high, seeds = curves["mirror + a moving magnet: main (3 seeds)"]  # the magnet's own bench
    assert seeds == 3 and xs[-1] == 9_994_240
    assert (round(mean[-1], 3), round(low[-1], 3), round(high[-1], 3)) == (0.303, 0.194, 0.412)
    scores, classes = figures.heldout_by_size(ROOT / "bench" / "data")
    assert classes["up to 11x11"] == ["open_field", "twin_rooms"]
    assert round(scores["rusher"]["LSTM + trail (the demo)"]["up to 11x11"][0], 2) == 0.74
    train, _, ratio = figures.speed_bars(ROOT / "bench" / "data")
    assert round(train[0][1]) == 7405 and round(ratio, 2) == 6.15


def test_every_figure_is_committed_and_shown_with_its_command():
    results = (ROOT / "docs" / "results.md").read_text()
    assert "python bench/figures.py" in results
    for name in figures.FIGURES:
        assert (ROOT / "docs" / "figures" / f"{name}.png").exists(), f"docs/figures/{name}.png is not committed"
        assert f"](figures/{name}.png)" in results, f"docs/results.md does not show figures/{name}.png"


@pytest.mark.parametrize("args, says", [
    (["--only", "speeed"], "did you mean 'speed'"),
    (["--data", "no_such_folder"], "is not a folder"),
])
def test_bad_arguments_are_one_line(tmp_path, args, says):
    proc = subprocess.run([sys.executable, str(ROOT / "bench" / "figures.py"), "--out", str(tmp_path), *args],
                          capture_output=True, text=True, cwd=tmp_path)
    assert proc.returncode == 2 and says in proc.stderr and len(proc.stderr.strip().splitlines()) == 1, proc.stderr


def test_missing_data_is_one_line(tmp_path):
    (tmp_path / "data").mkdir()
    proc = subprocess.run([sys.executable, str(ROOT / "bench" / "figures.py"), "--data", str(tmp_path / "data"),
                           "--out", str(tmp_path / "out"), "--only", "speed"], capture_output=True, text=True)
    assert proc.returncode == 2 and "shipped_speed_quiet.json: no such file" in proc.stderr, proc.stderr
    assert not (tmp_path / "out").exists()
