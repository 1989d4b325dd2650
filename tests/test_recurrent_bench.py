"""bench/ablations/memory_ablation.py (MLP + trail vs LSTM with and without the trail on CTF) at smoke size, as a
user runs it: by subprocess, checking the last JSON line and the per-seed intervals."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_ablation_benches import assert_interval_from_seeds, run_bench

pytestmark = [pytest.mark.ray, pytest.mark.slow]


def test_memory_ablation_smoke(tmp_path):
    out = run_bench("memory_ablation.py", "--minutes", "0.01", "--setups", "mlp_trail,lstm_notrail",
                    "--env-id", "CaptureTheFlag-v0", "--set", "agent.model.lstm_cell_size=16", out_dir=tmp_path)
    assert out["bench"] == "memory_ablation" and out["env_id"] == "CaptureTheFlag-v0" and out["seeds"] == 2
    assert set(out["setups"]) == {"mlp_trail", "lstm_notrail"}
    assert {"random", "rusher", "raider"} <= set(out["ladder"])
    for setup in out["setups"].values():
        for stat in [*setup["ladder"].values(), setup["navigation"]]:
            assert_interval_from_seeds(stat, 2)
            assert all(0.0 <= v <= 1.0 for v in stat["values"])
        assert all(i >= 1 for i in setup["iterations"])
        # per held-out map: navigation and every bot, each map's interval over the same 2 seeds
        assert set(setup["per_map"]) == {"navigation", *out["ladder"]}
        maps = set(setup["per_map"]["navigation"])
        assert len(maps) >= 2 and all(set(setup["per_map"][k]) == maps for k in setup["per_map"])
        for per in setup["per_map"].values():
            for stat in per.values():
                assert_interval_from_seeds(stat, 2)
                assert all(0.0 <= v <= 1.0 for v in stat["values"])
    assert set(out["winner"]) == {"navigation", *(f"ladder/{b}" for b in out["ladder"])}


def test_memory_ablation_has_the_memory_map_and_wider_view_arms():
    """`mlp_seen_map` (the memory map on) and `mlp_view6` (a 13x13 window): the MLP + trail recipe with that one
    env option; nothing else differs from `mlp_trail`; `mlp_seen_map_conv` adds convolutions over the map."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from bench.ablations.memory_ablation import setup_config

    plain = setup_config("CaptureTheFlag-v0", "mlp_trail", 0, [])
    for setup, kwargs in (("mlp_seen_map", {"seen_map": 7}), ("mlp_view6", {"view_radius": 6})):
        other = setup_config("CaptureTheFlag-v0", setup, 0, [])
        assert other["env"]["kwargs"] == kwargs
        other["env"].pop("kwargs")
        assert other == plain
    conv = setup_config("CaptureTheFlag-v0", "mlp_seen_map_conv", 0, [])
    assert conv["agent"]["model"].pop("map_channels") == [16, 16]
    assert conv == setup_config("CaptureTheFlag-v0", "mlp_seen_map", 0, [])  # the convolutions, nothing else
    # one more level family, the rest of the curriculum (strategy, sizes from --set) as mlp_trail's
    sized = ["curriculum.strategy=plr", "curriculum.uniform.size=[7, 21]"]
    halls = setup_config("CaptureTheFlag-v0", "mlp_halls", 0, sized)
    assert halls["curriculum"]["uniform"].pop("families") == ["open", "maze", "rooms", "halls"]
    assert halls == setup_config("CaptureTheFlag-v0", "mlp_trail", 0, sized)
