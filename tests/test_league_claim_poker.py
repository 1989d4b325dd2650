"""bench/ablations/league_claim.py --game kuhn|leduc: the arms' configs, the curves read from a run's history, the
summary's paired differences, and bad command lines. Pure (no Ray)."""
from __future__ import annotations

import math
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from bench.ablations import league_claim as lc  # noqa: E402
from bench.ablations import league_claim_poker as lcp  # noqa: E402
from spade_rllib.config.run_config import parse_config, read_yaml  # noqa: E402


@pytest.mark.parametrize("game", sorted(lcp.POKER_GAMES))
def test_arms(game, tmp_path):
    spec = lcp.POKER_GAMES[game]
    base = read_yaml(spec.config.read_text())
    for arm in lcp.POKER_ARMS:
        if arm == "mirror_untuned" and spec.untuned is None:
            with pytest.raises(ValueError, match="never tuned"):
                lcp.arm_config(base, spec, arm, 2, 5, [], tmp_path)
            continue
        cfg = parse_config(lcp.arm_config(base, spec, arm, 2, 5, [], tmp_path))
        assert cfg.experiment.seed == 2 and cfg.env.id == spec.env_id and cfg.evaluation.interval == 0
        assert cfg.league.enabled == (arm in lcp.ARM_SAMPLING), arm
        assert dict(cfg.self_play.opponent_mix) == {} and cfg.self_play.mode == "mirror"
        if cfg.league.enabled:
            assert cfg.league.every_n_iterations == 5 and cfg.evaluation.exploitability_interval == 5
            assert not cfg.league.include_random and cfg.league.latest_ratio == 0.0
            assert cfg.league.sampling == lcp.ARM_SAMPLING[arm]["sampling"]
            assert cfg.evaluation.exploitability_mixture == lcp.ARM_MIXTURE[arm]
    ppo = parse_config(lcp.arm_config(base, spec, "ppo_iig", 0, 5, [], tmp_path))
    assert ppo.agent.entropy == 0.2 and ppo.agent.clip == 0.1 and ppo.agent.train_batch_size == 1024
    # measured as often in env steps as the recipe's arms
    recipe_batch = parse_config(base).agent.train_batch_size
    assert ppo.evaluation.exploitability_interval * 1024 == 5 * recipe_batch


def test_curves_and_paired_summary():
    hist = {"env_steps": [100 * (i + 1) for i in range(6)], "exploitability/env_steps": [100.0 * (i + 1) for i in range(6)]}
    for c in lcp.CURVES:
        hist[f"exploitability/{c}"] = [0.5 - 0.05 * i if c in ("main", "average", "mixture_uniform") else math.nan
                                       for i in range(6)]
    curve = lcp.curves_of(hist, 2)
    assert curve["env_steps"] == [200, 400, 600] and curve["main"] == [0.45, 0.35, 0.25]
    assert curve["mixture_nash"] == [None, None, None]

    def unit(seed, main, average, mixture=None):
        c = {k: [None] for k in lcp.CURVES}
        c.update(env_steps=[600], main=[main], average=[average])
        if mixture is not None:
            c.update(mixture_uniform=[mixture], mixture_plan=[mixture], mixture_nash=[mixture])
        return {"seed": seed, "curve": c, "env_steps": 600, "train_s": 1.0}

    runs = {"mirror": [unit(0, 0.3, 0.2), unit(1, 0.32, 0.22)],
            "league_uniform": [unit(0, 0.2, 0.15, 0.1), unit(1, 0.24, 0.17, 0.14)]}
    arms, paired = lcp.summarize(runs)
    assert set(arms) == {"mirror", "league_uniform", "mirror_average"}
    assert arms["mirror_average"]["main"]["mean"] == pytest.approx(0.21)
    d = paired["league_uniform"]
    assert d["main - mirror main"]["mean"] == pytest.approx(-0.09)
    assert d["mixture - mirror main"]["mean"] == pytest.approx(-0.19)
    assert d["mixture - mirror average"]["mean"] == pytest.approx(-0.09)
    assert paired["mirror_average"]["main - mirror main"]["values"] == [pytest.approx(-0.1), pytest.approx(-0.1)]


def test_bad_command_lines_stop_before_ray():
    with pytest.raises(SystemExit):
        lc.main(["--game", "kuhn", "--arms", "mirror,leage_nash"])
    with pytest.raises(SystemExit):
        lc.main(["--game", "leduc", "--every", "0"])
    assert lc._poker_game(["--game=leduc"]) == "leduc" and lc._poker_game(["--game", "c4"]) is None


def test_the_untuned_mirror_arm_is_the_recipe_before_its_sweep(tmp_path):
    spec = lcp.POKER_GAMES["leduc"]
    base = read_yaml(spec.config.read_text())
    tuned = parse_config(lcp.arm_config(base, spec, "mirror", 0, 10, [], tmp_path)).agent
    untuned = parse_config(lcp.arm_config(base, spec, "mirror_untuned", 0, 10, [], tmp_path)).agent
    assert (untuned.entropy, untuned.lr) == (0.01, 3e-4)
    assert untuned.train_batch_size == tuned.train_batch_size and untuned.epochs == tuned.epochs
    # Kuhn's recipe was never tuned: the arm drops out of the defaults and is refused when named
    args, arms, *_ = lcp.parse_args(["--game", "kuhn"])
    assert "mirror_untuned" not in arms and "ppo_iig" in arms
    assert "mirror_untuned" in lcp.parse_args(["--game", "leduc"])[1]
    with pytest.raises(SystemExit):
        lcp.parse_args(["--game", "kuhn", "--arms", "mirror,mirror_untuned"])
