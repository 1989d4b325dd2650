"""The summary's held-out size lines: maps grouped by size class, main's score per racing bot and its worst map."""
from __future__ import annotations

import pytest

from spade_rllib.config.run_config import ConfigError, parse_config
from spade_rllib.core.outcome import EpisodeOutcome
from spade_rllib.rllib.final_heldout_eval import MAP_PREFIX, SIZE_PREFIX, heldout_levels_up_to, size_class, size_class_metrics, size_lines

CTF_MAPS = "spade_rllib/levels/heldout_ctf"


def test_size_classes_by_the_larger_side():
    assert [size_class(h, w) for h, w in ((9, 9), (11, 11), (13, 13), (15, 15), (11, 17), (21, 21), (25, 25))] == \
        ["small", "small", "medium", "medium", "large", "large", "large"]


def test_every_size_class_has_shipped_maps_and_large_ones_include_19_and_21():
    sizes = {o["heldout_level"]: (o["level"].height, o["level"].width) for o in heldout_levels_up_to([CTF_MAPS], 0, 1)}
    by_class = {}
    for name, (h, w) in sizes.items():
        by_class.setdefault(size_class(h, w), []).append(name)
    assert len(by_class["small"]) >= 2 and len(by_class["medium"]) >= 2 and len(by_class["large"]) >= 5
    sides = {max(h, w) for h, w in sizes.values()}
    assert {17, 19, 21} <= sides


def outcome(level: str, opponent: str, result: str) -> EpisodeOutcome:
    winner = {"win": "A", "loss": "B", "draw": "draw"}[result]
    return EpisodeOutcome(winner=winner, learner_team=0, opponent=opponent, heldout_level=level)


def test_metrics_and_lines_per_class():
    sizes = {"open_field": (9, 9), "maze_17": (17, 17), "maze_21": (21, 21)}
    records = [outcome("open_field", "bot:rusher", "win")] * 4 \
        + [outcome("maze_17", "bot:rusher", r) for r in ("win", "draw", "loss", "loss")] \
        + [outcome("maze_21", "bot:rusher", r) for r in ("loss", "loss", "loss", "draw")] \
        + [outcome(m, "bot:raider", "draw") for m in sizes for _ in range(4)]
    final = size_class_metrics(records, sizes)
    assert final[f"{SIZE_PREFIX}/small/levels"] == ["open_field"] and f"{SIZE_PREFIX}/medium/levels" not in final
    assert final[f"{SIZE_PREFIX}/large/bot:rusher/score"] == pytest.approx(2.0 / 8)
    assert final[f"{MAP_PREFIX}/maze_21/bot:rusher/score"] == pytest.approx(0.125)
    lines = size_lines(final, ["bot:rusher", "bot:raider", "bot:hybrid"])
    assert lines == [
        "held-out maps up to 11x11 (open_field; 4 games per opponent): main's score rusher 1.00, raider 0.50",
        "held-out maps 17x17 to 21x21 (maze_17, maze_21; 8 games per opponent): main's score rusher 0.25 "
        "(worst maze_21 0.12), raider 0.50 (worst maze_17 0.50)"]
    assert size_lines({}, ["bot:rusher"]) == []


def test_config():
    cfg = parse_config({"env": {"id": "CaptureTheFlag-v0"}, "evaluation": {
        "final_heldout_levels": [CTF_MAPS], "final_heldout_size_opponents": ["bot:rusher", "bot:hybrid"]}})
    assert cfg.evaluation.final_heldout_size_opponents == ["bot:rusher", "bot:hybrid"]
    assert cfg.evaluation.final_heldout_size_games == 10
    with pytest.raises(ConfigError, match=r"final_heldout_size_opponents\[0\] = 'bot:rushr'.*did you mean"):
        parse_config({"env": {"id": "CaptureTheFlag-v0"}, "evaluation": {
            "final_heldout_levels": [CTF_MAPS], "final_heldout_size_opponents": ["bot:rushr"]}})
    # without held-out maps the held-out lines are off, the size lines with them (benches clear the maps only)
    off = parse_config({"env": {"id": "CaptureTheFlag-v0"}, "evaluation": {"final_heldout_size_opponents": ["bot:rusher"]}})
    assert off.evaluation.final_heldout_levels == []
    for name in ("quickstart", "flagship"):
        from spade_rllib.config.run_config import load_config

        ev = load_config(f"tune_configs/{name}.yaml").evaluation
        assert ev.final_heldout_size_opponents == ["bot:rusher", "bot:raider", "bot:hybrid"]


def test_run_report_table(tmp_path):
    from spade_rllib.reporting.html import size_rows
    from spade_rllib.reporting.run_reader import TRAIN, RunData

    sizes = {"open_field": (9, 9), "maze_17": (17, 17), "maze_21": (21, 21)}
    records = [outcome(m, "bot:rusher", r) for m in sizes for r in ("win", "loss")]
    run = RunData(label="t", path=tmp_path, kind=TRAIN, final=size_class_metrics(records, sizes))
    rows = size_rows(run)
    assert [(r["class"], r["opponent"], r["score"], r["games"]) for r in rows] == [
        ("up to 11x11", "bot:rusher", "0.500", 2), ("17x17 to 21x21", "bot:rusher", "0.500", 4)]
    assert rows[1]["worst map"] == "maze_17 0.50" and rows[1]["maps"] == "maze_17, maze_21"
