"""bench/ablations/league_claim.py: the arms train against no scripted player, the payoff and best-response summaries,
bad command lines stop before Ray, and a smoke run on Connect Four end to end (units cached on a rerun)."""
from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from bench.ablations import league_claim as lc  # noqa: E402
from spade_rllib.config.run_config import parse_config, read_yaml  # noqa: E402
from spade_rllib.sweeps.stats import seed_interval  # noqa: E402


@pytest.mark.parametrize("game", sorted(lc.GAMES))
def test_self_play_arms_meet_no_scripted_player_in_training(game, tmp_path):
    spec = lc.GAMES[game]
    base = read_yaml(spec.config.read_text())
    for arm in ("mirror", "league", "league_exploiters"):
        cfg = parse_config(lc.arm_config(base, spec, arm, 3, [], tmp_path))
        assert cfg.experiment.seed == 3 and cfg.evaluation.interval == 0
        assert dict(cfg.self_play.opponent_mix) == {}, arm
        assert cfg.league.enabled == (arm != "mirror"), arm
        if cfg.league.enabled:
            assert cfg.league.include_random is False and tuple(cfg.league.bots) == () and cfg.league.reference_floor == 0
            assert cfg.league.sampling == "pfsp" and cfg.league.self_play_ratio > 0
        exploiters = (cfg.league.main_exploiters, cfg.league.league_exploiters)
        assert exploiters == ((1, 1) if arm == "league_exploiters" else (0, 0)), arm
    ref = parse_config(lc.arm_config(base, spec, "reference", 0, [], tmp_path))
    trained_on = set(ref.self_play.opponent_mix) | set(ref.league.bots if ref.league.enabled else ())
    assert trained_on, "the reference arm is the shipped recipe, scripted opponents included"
    br = parse_config(lc.exploiter_config(base, spec, 2, [], tmp_path))
    assert br.experiment.seed == 1002 and not br.league.enabled  # a fresh network, not main's seed


def test_set_overrides_the_games_league_settings_but_not_the_arm(tmp_path):
    spec = lc.GAMES["c4"]
    base = read_yaml(spec.config.read_text())
    raw = lc.arm_config(base, spec, "league", 0, ["league.every_n_iterations=1", "league.include_random=true"], tmp_path)
    cfg = parse_config(raw)
    assert cfg.league.every_n_iterations == 1  # the user's --set wins over the game's default (10)
    assert cfg.league.include_random is False  # but the arm stays a league of main's own snapshots


def test_board_game_evaluation_starts_from_random_openings(tmp_path):
    spec = lc.GAMES["c4"]
    cfg = parse_config(lc.arm_config(read_yaml(spec.config.read_text()), spec, "league", 0, [], tmp_path))
    assert cfg.evaluation.random_opening_plies == lc.EVAL_OPENING_PLIES


def test_payoff_summary_reads_progress_and_regressions():
    # snapshot 2 beats both earlier ones, snapshot 1 lost to snapshot 0: one regression out of three pairs
    m = np.array([[0.5, 0.6, 0.1], [0.4, 0.5, 0.2], [0.9, 0.8, 0.5]])
    s = lc.payoff_summary(m)
    assert s["progress"] == pytest.approx((0.4 + 0.9 + 0.8) / 3)
    assert s["final_vs_past"] == pytest.approx(0.85)
    assert s["regressions"] == pytest.approx(1 / 3)


def test_curve_stats_area_and_plateau():
    rising = [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8]
    flat = [0.1, 0.5, 0.7, 0.7, 0.7, 0.7, 0.7, 0.7]
    assert lc.curve_stats(rising)["plateau"] == pytest.approx(0.2)  # (0.75) - (0.55): still climbing
    assert lc.curve_stats(flat)["plateau"] == pytest.approx(0.0)
    assert lc.curve_stats(flat)["auc"] == pytest.approx(np.mean(flat))
    assert lc.curve_stats(rising)["final"] == pytest.approx(0.75)  # the last quarter: what it plateaus at
    assert np.isnan(lc.curve_stats([float("nan")])["auc"])


def test_snapshot_marks_are_evenly_spaced_before_the_end():
    assert lc.snapshot_marks(600, 6) == [100, 200, 300, 400, 500]
    assert lc.snapshot_marks(10, 2) == [5]


def test_summarize_pairs_by_seed():
    def record(seed, score, exploit):
        return {"seed": seed, "heldout": {"random": score}, "exploit": {"score": 1.0, "curve": [exploit], "env_steps": 10},
                "payoff": [[0.5, 0.3], [0.7, 0.5]], "env_steps": 100, "train_s": 1.0}
    runs = {"mirror": [record(0, 0.5, 0.6), record(1, 0.7, 0.5)], "league": [record(1, 0.8, 0.2), record(0, 0.55, 0.4)]}
    arms, paired = lc.summarize(runs, ["random"])
    assert arms["league"]["heldout"]["random"]["values"] == [0.8, 0.55]
    diff = paired["league"]["heldout/random"]
    assert diff["values"] == [pytest.approx(0.05), pytest.approx(0.1)]  # seed 0, seed 1: paired, not by position
    assert diff["mean"] == pytest.approx(seed_interval([0.05, 0.1]).mean)
    assert paired["league"]["exploitability"]["values"] == [pytest.approx(-0.2), pytest.approx(-0.3)]
    assert arms["league"]["mixture_heldout_mean"]["n"] == 0  # units from before the mixture was scored
    assert arms["mirror"]["payoff"]["progress"]["mean"] == pytest.approx(0.7)


def test_units_without_weights_round_trip(tmp_path):
    from bench.ablation_common import UnitCache

    cache = UnitCache(tmp_path, {"bench": "league_claim"}, keep_weights=False)
    cache.save("league", 2, {"heldout": {"random": 0.75}}, {"pi": {"w": np.zeros(2)}})
    assert cache.load("league", 2)["heldout"] == {"random": 0.75} and cache.load("league", 1) is None
    assert sorted(p.name for p in (tmp_path / "units").iterdir()) == ["league_seed2.json"]


@pytest.mark.parametrize("argv, words", [
    (["--game", "c4", "--snapshots", "1"], ["--snapshots 1"]),
    (["--game", "c4", "--max-map-size", "9"], ["--max-map-size 9", "ctf"]),
    (["--game", "c4", "--opponents", "mcts100,lookahed"], ["lookahed", "did you mean 'lookahead'"]),
    (["--game", "c4", "--minutes", "nan"], ["finite"]),
    (["--game", "go"], ["--game", "ctf"]),
    (["--game", "ctf", "--arms", "mirror,pfsp"], ["--arms", "league_exploiters"]),
    (["--game", "ctf", "--exploit-env-steps", "-1"], ["--exploit-env-steps -1", "0: no best response"]),
])
def test_bad_command_lines_are_one_error_before_ray(argv, words, tmp_path):
    proc = subprocess.run([sys.executable, str(ROOT / "bench" / "ablations" / "league_claim.py"), *argv, "--out-dir", str(tmp_path)],
                          capture_output=True, text=True, timeout=120, cwd=ROOT, env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert proc.returncode == 2, proc.stderr
    error = [line for line in proc.stderr.splitlines() if "error:" in line]
    assert len(error) == 1 and all(w in error[0] for w in words), proc.stderr
    assert "ray" not in proc.stderr.lower().replace("--arms", "") and not any(tmp_path.iterdir())


def test_no_best_response_passes_every_command_line_check(tmp_path):
    """`--exploit-env-steps 0` reaches the units (the shared bench checks once refused it as a count >= 1):
    with `--max-units 0` nothing trains and the summary says the unit is missing."""
    argv = ["--game", "ctf", "--exploit-env-steps", "0", "--seeds", "1", "--arms", "league", "--max-units", "0"]
    proc = subprocess.run([sys.executable, str(ROOT / "bench" / "ablations" / "league_claim.py"), *argv, "--out-dir", str(tmp_path)],
                          capture_output=True, text=True, timeout=120, cwd=ROOT, env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert proc.returncode == 0, proc.stderr
    summary = json.loads(proc.stdout.strip().splitlines()[-1])
    assert summary["exploit_env_steps"] == 0 and summary["units_missing"] == ["league_seed0"]


def test_without_a_best_response_its_measures_are_not_available():
    """`--exploit-env-steps 0`: the unit records `NO_BEST_RESPONSE`; its exploitability measures are NaN (n/a in
    the summary, never 0) and every other measure is kept."""
    record = {"heldout": {"random": 0.75, "rusher": 0.25}, "mixture": {"heldout": {"random": 0.5, "rusher": 0.5}},
              "exploit": lc.NO_BEST_RESPONSE, "payoff": [[0.5, 0.25], [0.75, 0.5]]}
    m = lc.measures(record, ["random", "rusher"])
    assert m["heldout_mean"] == 0.5 and m["mixture_heldout_mean"] == 0.5 and m["payoff/progress"] == 0.75
    for key in ("exploitability", "exploit_auc", "exploit_plateau", "exploit_match"):
        assert math.isnan(m[key]), key
    arms, _ = lc.summarize({"mirror": [{**record, "seed": 0, "env_steps": 10, "train_s": 1.0}]}, ["random", "rusher"])
    assert arms["mirror"]["exploitability"]["mean"] is None and arms["mirror"]["exploit_env_steps"] == [0]


C4_TINY = ["--game", "c4", "--seeds", "2", "--arms", "mirror,league", "--opponents", "random,mcts10",
           "--env-steps", "1500", "--exploit-env-steps", "600", "--games", "2", "--snapshots", "3",
           "--set", "agent.train_batch_size=512", "--set", "agent.minibatch_size=256", "--set", "agent.epochs=1",
           "--set", "agent.model.hidden=[16]", "--set", "training.num_envs_per_runner=8",
           "--set", "training.num_env_runners=0", "--set", "training.sample_ahead=false",
           "--set", "league.every_n_iterations=1", "--set", "league.min_iterations_between=0"]


@pytest.mark.ray
@pytest.mark.slow
def test_league_claim_smoke_on_connect_four(tmp_path):
    """Two arms x two seeds, every measure in the last JSON line with Student-t intervals over the seeds, the
    paired difference, the payoff heatmap; a rerun with the same out-dir trains nothing."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    cmd = [sys.executable, str(ROOT / "bench" / "ablations" / "league_claim.py"), *C4_TINY, "--out-dir", str(tmp_path)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600, env=env, cwd=ROOT, check=True)
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["bench"] == "league_claim" and out["game"] == "c4" and out["complete"] is True
    assert out["opponents"] == ["random", "mcts10"] and set(out["arms"]) == {"mirror", "league"}
    for arm in out["arms"].values():
        stats = [*arm["heldout"].values(), arm["heldout_mean"], arm["exploitability"], arm["exploit_auc"], arm["exploit_match"],
                 *(arm["payoff"][k] for k in ("progress", "final_vs_past", "regressions"))]
        for stat in stats:
            iv = seed_interval(stat["values"])
            assert stat["n"] == 2 and stat["mean"] == pytest.approx(iv.mean, abs=1e-5)
            assert stat["low"] == pytest.approx(iv.low, abs=1e-5) and stat["high"] == pytest.approx(iv.high, abs=1e-5)
            assert all(0.0 <= v <= 1.0 for v in stat["values"])
        m = np.asarray(arm["payoff"]["matrix"])
        assert m.shape == (3, 3) and np.allclose(m + m.T, 1.0)
        assert all(s >= 600 for s in arm["exploit_env_steps"])
        assert all(s >= 1500 for s in arm["env_steps"])
    assert set(out["paired"]["league"]) >= {"heldout_mean", "exploitability", "payoff/progress", "heldout/mcts10"}
    unit = json.loads((tmp_path / "units" / "league_seed1.json").read_text())
    assert unit["exploit"]["games_last_iteration"] > 0  # the best response trained against the frozen main
    assert len(unit["exploit"]["curve"]) == len(unit["exploit"]["curve_env_steps"]) >= 1
    assert (tmp_path / "exploitability.png").is_file()
    assert len(unit["snapshot_env_steps"]) == 2 and (tmp_path / "payoff.png").is_file()
    assert unit["config"]["league"]["enabled"] is True and unit["config"]["experiment"]["seed"] == 1  # what ran
    assert unit["league"]["snapshots"] >= 1  # the league arm froze snapshots of main
    assert json.loads((tmp_path / "units" / "mirror_seed1.json").read_text())["league"] == {}
    assert str(tmp_path) not in json.dumps(unit)  # no machine path: units can be committed and moved
    # a unit is its JSON record, plus the mixture it scored (members' weights) so it can be re-scored
    assert sorted(p.name for p in (tmp_path / "units").glob("*.pt")) == sorted(
        f"{a}_seed{k}_mixture.pt" for a in ("mirror", "league") for k in (0, 1))
    mix = unit["mixture"]
    assert mix["mode"] == "uniform" and "main" in mix["members"] and len(mix["members"]) >= 2
    assert sum(mix["members"].values()) == pytest.approx(1.0) and set(mix["heldout"]) == {"random", "mcts10"}
    mirror_mix = json.loads((tmp_path / "units" / "mirror_seed1.json").read_text())["mixture"]
    assert mirror_mix["mode"] == "copies" and len(mirror_mix["members"]) == 3  # its --snapshots copies of main
    for arm in out["arms"].values():
        assert arm["mixture_heldout_mean"]["n"] == 2 and all(0.0 <= v <= 1.0 for v in arm["mixture_heldout_mean"]["values"])
    assert "mixture_heldout_mean" in out["paired"]["league"]
    import torch

    kept = torch.load(tmp_path / "units" / "league_seed1_mixture.pt", weights_only=True)
    assert kept["weights"] == mix["members"] and set(kept["members"]) == set(mix["members"])
    again = subprocess.run(cmd, capture_output=True, text=True, timeout=600, env=env, cwd=ROOT, check=True)
    assert json.loads(again.stdout.strip().splitlines()[-1]) == out and again.stderr.count("cached: ") == 4


@pytest.mark.ray
def test_a_best_response_can_start_from_a_copy_of_main(ray_session, tmp_path):
    """`--exploit-init main`: the learner trained against the frozen main starts with main's weights; the
    default starts from a fresh network."""
    from bench.ablation_common import train, train_against
    from spade_rllib.config.run_config import apply_overrides

    spec = lc.GAMES["c4"]
    base = read_yaml(spec.config.read_text())
    tiny = [C4_TINY[i + 1] for i, flag in enumerate(C4_TINY) if flag == "--set"]
    raw = apply_overrides(lc.arm_config(base, spec, "mirror", 0, [], tmp_path), tiny)
    target = train(raw, 10.0, 512, "target")["weights"]  # one iteration: weights of its own, not a fresh net's
    br_raw = apply_overrides(lc.exploiter_config(base, spec, 0, [], tmp_path), tiny)

    def diff(a, b):
        return max(float(np.max(np.abs(np.asarray(a[k]) - np.asarray(b[k])))) for k in a)

    copied = train_against(target, br_raw, 0, 0.0, None, "copy", start_from_target=True)["weights"]  # 0 iterations
    fresh = train_against(target, br_raw, 0, 0.0, None, "fresh")["weights"]
    assert diff(copied, target) == 0.0 and diff(fresh, target) > 0.05
    assert lc.parse_args(["--game", "c4", "--exploit-init", "main"])[0].exploit_init == "main"
    assert lc.parse_args(["--game", "c4"])[0].exploit_init == "fresh"


def test_address_joins_the_running_cluster_instead_of_starting_one(monkeypatch):
    import ray

    from bench.common import local_ray

    calls = []
    monkeypatch.setattr(ray, "init", lambda **kw: calls.append(kw))
    monkeypatch.setattr(ray, "shutdown", lambda: calls.append("shutdown"))
    with local_ray(2, quiet=True, address="auto"):
        pass
    with local_ray(3):
        pass
    assert calls[0]["address"] == "auto" and "num_cpus" not in calls[0]  # a cluster's CPUs are its own
    assert calls[2]["num_cpus"] == 3 and "address" not in calls[2] and calls.count("shutdown") == 2
    args = lc.parse_args(["--game", "c4", "--address", "auto"])[0]
    assert args.address == "auto"


def test_mixture_draws_follow_the_weights():
    rng = np.random.default_rng(0)
    counts = lc.draw_counts({"main": 0.5, "main_v1": 0.5, "main_v2": 0.0}, 4000, rng)
    assert set(counts) == {"main", "main_v1"} and sum(counts.values()) == 4000
    assert abs(counts["main"] - 2000) < 200
