"""The summary's held-out line: config checks, map filtering by size, the line and its verdicts."""
from __future__ import annotations

import pytest

from spade_rllib.config.run_config import ConfigError, parse_config
from spade_rllib.rllib.final_heldout_eval import ALL_PREFIX, PREFIX, heldout_levels_up_to, heldout_line, navigation_line

CTF_MAPS = "spade_rllib/levels/heldout_ctf"


def test_maps_up_to_a_size():
    small = [o["heldout_level"] for o in heldout_levels_up_to([CTF_MAPS], 11, 1)]
    assert small == ["open_field", "twin_rooms"]
    assert len(heldout_levels_up_to([CTF_MAPS], 0, 1)) == 11


def test_line_with_verdicts_from_the_targets():
    final = {f"{PREFIX}/levels": ["open_field", "twin_rooms"],
             f"{PREFIX}/still/win_rate": 0.9, f"{PREFIX}/still/draw_rate": 0.1,
             f"{PREFIX}/bot:rusher/win_rate": 0.5, f"{PREFIX}/bot:rusher/draw_rate": 0.2}
    line = heldout_line(final, ["still", "random", "bot:rusher"], {"still": 0.95, "bot:rusher": 0.7}, 11)
    assert line == ("held-out maps up to 11x11 (open_field, twin_rooms): main's score still 0.95 PASS (>= 0.95), "
                    "bot:rusher 0.60 BELOW TARGET (>= 0.7)")


def test_navigation_line_on_every_map():
    final = {f"{ALL_PREFIX}/levels": ["crossroads", "open_field"], f"{ALL_PREFIX}/still/win_rate": 0.5,
             f"{ALL_PREFIX}/still/draw_rate": 0.5}
    assert navigation_line(final, 0.8) == ("every held-out map (crossroads, open_field): main's navigation "
                                           "(the other team never moves) 0.75 BELOW TARGET (>= 0.8)")
    assert navigation_line({}, 0.8) is None  # not played: no line
    # a score just under the target never rounds up to it on the line
    close = {**final, f"{ALL_PREFIX}/still/win_rate": 0.7916, f"{ALL_PREFIX}/still/draw_rate": 0.0084}
    assert navigation_line(close, 0.8).endswith("0.796 BELOW TARGET (>= 0.8)")
    # per map (the final evaluation writes final_heldout_map/<map>/still/score): the worst is named
    per_map = {**final, "final_heldout_map/crossroads/still/score": 0.5, "final_heldout_map/open_field/still/score": 1.0}
    assert navigation_line(per_map, 0.8).endswith("0.75, worst crossroads 0.50 BELOW TARGET (>= 0.8)")


def test_still_results_per_map():
    from spade_rllib.rllib.final_heldout_eval import _still_per_map

    out = _still_per_map(["win", "draw", "loss", "loss", "win", "win", "win", "win"], ["a", "b"])
    assert out == {"final_heldout_map/a/still/score": 0.375, "final_heldout_map/a/still/games": 4,
                   "final_heldout_map/b/still/score": 1.0, "final_heldout_map/b/still/games": 4}


def test_score_text_keeps_two_decimals_unless_they_cross_the_target():
    from spade_rllib.training.targets import score_text

    assert score_text(0.654) == "0.65" and score_text(0.7958, 0.8) == "0.796" and score_text(0.8049, 0.8) == "0.80"
    assert score_text(0.6951, 0.7) == "0.695" and score_text(0.6949, 0.7) == "0.69" and score_text(0.95, 0.95) == "0.95"


def test_config():
    cfg = parse_config({"env": {"id": "CaptureTheFlag-v0"},
                        "evaluation": {"final_heldout_levels": [CTF_MAPS], "final_heldout_opponents": ["still", "bot:rusher"],
                                       "final_heldout_targets": {"still": 0.9}}})
    assert cfg.evaluation.final_heldout_levels[0].endswith("heldout_ctf")
    with pytest.raises(ConfigError, match=r"final_heldout_targets\.bot:rusher: not one of"):  # default opponents: still, random
        parse_config({"env": {"id": "CaptureTheFlag-v0"}, "evaluation": {"final_heldout_targets": {"bot:rusher": 0.9}}})
    with pytest.raises(ConfigError, match=r"final_heldout_opponents\[0\] = 'bot:rushr'"):
        parse_config({"env": {"id": "CaptureTheFlag-v0"}, "evaluation": {"final_heldout_opponents": ["bot:rushr"]}})
    with pytest.raises(ConfigError, match=r"final_heldout_targets\.still = 2"):
        parse_config({"env": {"id": "CaptureTheFlag-v0"}, "evaluation": {"final_heldout_targets": {"still": 2}}})
    assert parse_config({"env": {"id": "CaptureTheFlag-v0"}, "evaluation": {
        "final_heldout_levels": [CTF_MAPS], "final_heldout_navigation_target": 0.8}}).evaluation.final_heldout_navigation_target == 0.8
    with pytest.raises(ConfigError, match=r"final_heldout_navigation_target = 0.8: needs the held-out maps"):
        parse_config({"env": {"id": "CaptureTheFlag-v0"}, "evaluation": {"final_heldout_navigation_target": 0.8}})
    for bad in (1.5, float("nan")):
        with pytest.raises(ConfigError, match=r"final_heldout_navigation_target"):
            parse_config({"env": {"id": "CaptureTheFlag-v0"}, "evaluation": {
                "final_heldout_levels": [CTF_MAPS], "final_heldout_navigation_target": bad}})
