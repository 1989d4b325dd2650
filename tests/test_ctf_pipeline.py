"""CaptureTheFlag-v0 through the pipeline, as MazeRace goes: config checks, the runner's level pool,
held-out evaluation, the curriculum (threshold and PLR), evaluate, play, export, the policy loader,
and tiny Ray runs (train with curriculum + held-out evaluation, league)."""
from __future__ import annotations

import json
import math
import subprocess
import sys

import numpy as np
import pytest

from spade_rllib.games import bot_names, default_bot_names
from spade_rllib.config.run_config import ConfigError, parse_config
from spade_rllib.games import heldout_dir
from spade_rllib.games import CTF_ID, MAZERACE_ID, canonical_env_id, env_kind, is_level_game
from spade_rllib.players.policy import PolicyLoadError, load_policy
from spade_rllib.testing.tiny_checkpoints import save_tiny_checkpoint

HELDOUT_DIR, HELDOUT_CTF_DIR = heldout_dir(MAZERACE_ID), heldout_dir(CTF_ID)
SMALL_MAPS = [str(HELDOUT_CTF_DIR / "open_field.txt"), str(HELDOUT_CTF_DIR / "twin_rooms.txt")]
LADDER = ("random", "rusher", "defender", "raider", "hybrid")


def tiny(**sections) -> dict:
    raw = {
        "experiment": {"name": "ctf_t", "seed": 2},
        "env": {"id": CTF_ID, "difficulty": 1.0},
        "agent": {"train_batch_size": 256, "minibatch_size": 128, "epochs": 1, "model": {"hidden": [16]}},
        "training": {"num_envs_per_runner": 4, "num_env_runners": 0},
        "evaluation": {"interval": 0},
    }
    for k, v in sections.items():
        raw.setdefault(k, {}).update(v)
    return raw


@pytest.fixture(scope="module")
def ckpt(tmp_path_factory):
    return save_tiny_checkpoint(tmp_path_factory.mktemp("ctf_ckpt") / "run", CTF_ID, snapshots=1, hidden=(32, 32))


# ------------------------------------------------------------------------------------------ ids, config
def test_level_game_ids():
    assert is_level_game(CTF_ID) and is_level_game(MAZERACE_ID) and not is_level_game("CartPole-v1")
    assert env_kind(CTF_ID) == env_kind(MAZERACE_ID) == "level"
    assert canonical_env_id("spade/CaptureTheFlag-v0") == CTF_ID
    assert (heldout_dir(CTF_ID).name, heldout_dir(MAZERACE_ID).name) == ("heldout_ctf", "heldout")
    assert default_bot_names(CTF_ID) == LADDER and bot_names(CTF_ID) == (*LADDER, "sentry")


def test_config_allows_level_options_and_checks_bots_per_game():
    cfg = parse_config(tiny(env={"difficulty": 3.0}, agent={"model": {"encoder": "cnn"}},
                            curriculum={"enabled": True, "strategy": "plr"},
                            self_play={"opponent_mix": {"bot:hybrid": 0.2}},
                            evaluation={"interval": 1, "opponents": ["bot:defender"], "heldout_levels": SMALL_MAPS}))
    assert cfg.env.difficulty == 3.0 and cfg.curriculum.enabled
    with pytest.raises(ConfigError, match=r"evaluation.opponents\[0\] = 'bot:rusher_tagger': unknown opponent.*'bot:hybrid'"):
        parse_config(tiny(evaluation={"opponents": ["bot:rusher_tagger"]}))
    with pytest.raises(ConfigError, match=r"self_play.opponent_mix.bot:hybrd = .*did you mean 'bot:hybrid'"):
        parse_config(tiny(self_play={"opponent_mix": {"bot:hybrd": 0.1}}))
    with pytest.raises(ConfigError, match="'bot:hybrid': unknown opponent.*; allowed: 'random', 'mirror', 'bot:random', 'bot:rusher', 'bot:rusher_tagger'$"):
        parse_config({"env": {"id": MAZERACE_ID}, "evaluation": {"opponents": ["bot:hybrid"]}})
    with pytest.raises(ConfigError, match="is a MazeRace-v0 map; this run plays CaptureTheFlag-v0"):
        parse_config(tiny(evaluation={"heldout_levels": [str(HELDOUT_DIR)]}))
    with pytest.raises(ConfigError, match="is a CaptureTheFlag-v0 map; this run plays MazeRace-v0"):
        parse_config({"env": {"id": MAZERACE_ID}, "evaluation": {"heldout_levels": SMALL_MAPS}})


@pytest.mark.parametrize("name", ["quickstart.yaml", "league.yaml", "league_exploiters.yaml", "curriculum.yaml", "plr.yaml"])
def test_headline_configs_play_ctf(name):
    from spade_rllib.config.run_config import load_config

    cfg = load_config(f"tune_configs/{name}")
    assert cfg.env.id == CTF_ID
    if cfg.evaluation.heldout_levels:
        assert cfg.evaluation.heldout_levels == [str(HELDOUT_CTF_DIR)]
    assert load_config("tune_configs/mazerace.yaml").env.id == MAZERACE_ID


# ------------------------------------------------------------------------------------------ runner
def _runner(raw: dict):
    from spade_rllib.rllib.algo_config import build_algo_config
    from spade_rllib.rllib.runner import SpadeEnvRunner

    algo_config = build_algo_config(parse_config(raw))
    return algo_config, SpadeEnvRunner(config=algo_config, worker_index=0, num_workers=0)


def test_runner_pool_bots_and_counters():
    _, runner = _runner(tiny(env={"level_pool": 8, "difficulty": 2.0}))
    try:
        pool = runner._training_level_pool()  # generated on first use
        assert len(pool) == 8 and all(level.is_ctf for level in pool)
        records = runner.evaluate_main({"opponents": ["bot:rusher", "bot:hybrid"], "games": 4, "greedy": False})
    finally:
        runner.stop()
    assert sorted({r.opponent for r in records}) == ["bot:hybrid", "bot:rusher"] and len(records) == 8
    for r in records:
        assert set(r.counters) == {"tags", "flag_pickups", "captures"}
    # a rusher picks up main's flag in most games against an untrained policy
    assert sum(r.counter("flag_pickups")[1] for r in records if r.opponent == "bot:rusher") >= 1


def test_tag_reward_shapes_training_games_only():
    """`env.kwargs.tag_reward` (a training-only signal) is in the training lanes' envs and in none of the
    evaluation games: their returns are the game's own win/draw/loss."""
    _, runner = _runner(tiny(env={"difficulty": 1.0, "kwargs": {"tag_reward": 0.25}}))
    try:
        assert {g.raw_env.unwrapped.tag_reward for g in runner.games} == {0.25}
        assert runner._make_eval_game().raw_env.unwrapped.tag_reward == 0.0
        records = runner.evaluate_main({"opponents": ["bot:raider"], "games": 6, "greedy": False})
    finally:
        runner.stop()
    for r in records:
        assert r.learner_return in (-1.0, 0.0, 1.0), r


def test_counter_means():
    from spade_rllib.core.outcome import EpisodeOutcome
    from spade_rllib.rllib.metrics import counter_means

    a = EpisodeOutcome.of({"winner": "A", "main_team": 0, "tags": {"A": 2, "B": 1}, "captures": {"A": 1, "B": 0}})
    b = EpisodeOutcome.of({"winner": "draw", "main_team": 1, "tags": {"A": 0, "B": 3}, "captures": {"A": 0, "B": 0}})
    m = counter_means([a, b])
    assert m == {"counters/tags": 2.5, "counters/tags_opponent": 0.5, "counters/captures": 0.5,
                 "counters/captures_opponent": 0.0}
    assert counter_means([EpisodeOutcome.of({"winner": "A"})]) == {}


def test_play_heldout_against_the_ladder():
    from spade_rllib.rllib.periodic_heldout_eval import heldout_opponents, play_heldout
    from spade_rllib.rllib.runner import MAIN

    algo_config, runner = _runner(tiny(evaluation={"interval": 1, "heldout_levels": SMALL_MAPS, "heldout_games": 2}))
    weights = runner.module[MAIN].get_state()
    runner.stop()
    opponents = heldout_opponents(CTF_ID)
    assert list(opponents) == [*LADDER, "self"] and opponents["hybrid"] == "bot:hybrid"
    m = play_heldout(algo_config, weights, SMALL_MAPS, games=2)
    for level in ("open_field", "twin_rooms"):
        for opp in opponents:
            assert m[f"heldout/{level}/{opp}/games"] == 2.0
            w, d = m[f"heldout/{level}/{opp}/win_rate"], m[f"heldout/{level}/{opp}/draw_rate"]
            assert m[f"heldout/{level}/{opp}/score"] == pytest.approx(w + d / 2)
    assert not math.isnan(m["heldout/hybrid/score"])


# ------------------------------------------------------------------------------------------ curriculum
@pytest.mark.parametrize("strategy", ["threshold", "plr"])
def test_curriculum_builds_ctf_levels(strategy):
    from spade_rllib.curriculum.curriculum_config import CurriculumConfig
    from spade_rllib.rllib.curriculum_component import CurriculumComponent, make_component
    from spade_rllib.rllib.components import EnvInfo

    cfg = parse_config(tiny(curriculum={"enabled": True, "strategy": strategy}))
    comp = make_component(cfg, EnvInfo(CTF_ID, "level", (("player_0",), ("player_1",)), 6, 826, 0))
    assert comp.env_id == CTF_ID
    source = comp.runner_update(full=True).level_source
    source = __import__("pickle").loads(__import__("pickle").dumps(source))  # shipped to runners pickled
    for key in range(6):
        options = source.reset_options((0, 0, key))
        assert options["level"].is_ctf and options["level_spec"]
    maze = CurriculumComponent(CurriculumConfig(strategy=strategy), MAZERACE_ID, seed=1)
    assert not maze.level_source().reset_options((0, 0, 0))["level"].is_ctf


def test_a_capture_completes_an_episode():
    from spade_rllib.curriculum.level_spec import outcome_completed
    from spade_rllib.core.outcome import EpisodeOutcome

    assert outcome_completed(EpisodeOutcome.of({"winner": "A", "reason": "capture"}))
    assert not outcome_completed(EpisodeOutcome.of({"winner": "draw", "reason": "timeout"}))


def test_curriculum_wrapper_uses_the_wrapped_game():
    from spade_rllib.curriculum import AdaptiveCurriculum, CurriculumConfig, make_strategy
    from spade_rllib.envs import CaptureTheFlag

    env = AdaptiveCurriculum(CaptureTheFlag(), make_strategy(CurriculumConfig(strategy="threshold"), seed=0), seed=0)
    env.reset(seed=0)
    assert env.unwrapped.level.is_ctf


# ------------------------------------------------------------------------------------------ tools
def test_evaluate_ctf_round_robin_on_heldout_maps(ckpt, tmp_path):
    from spade_rllib.evaluate import EvalConfig, build_pool, evaluate
    from spade_rllib.evaluation.schedule import ScheduleError, parse_levels

    heldout = parse_levels("heldout", CTF_ID, 0)
    assert len(heldout) == 11 and all(e.level.is_ctf for e in heldout)
    assert [e.level_id for e in parse_levels(None, CTF_ID, 0)] == [e.level_id for e in heldout]
    assert all(e.level.is_ctf for e in parse_levels("generated:2@3", CTF_ID, 0))
    with pytest.raises(ScheduleError, match="a MazeRace-v0 map, but the game is CaptureTheFlag-v0"):
        parse_levels(str(HELDOUT_DIR), CTF_ID, 0)
    specs, _ = build_pool(EvalConfig(checkpoints=[str(ckpt)], levels="heldout"))
    assert [s for s in specs if specs[s].kind == "bot"] == list(LADDER)
    cfg = EvalConfig(checkpoints=[str(ckpt)], levels=str(tmp_path / "maps"), games_per_pair=2, workers=0,
                     replays=1, bootstrap=10, progress=False, out=str(tmp_path / "out"), bots=["rusher", "hybrid"])
    (tmp_path / "maps").mkdir()
    for src in SMALL_MAPS[:1]:
        (tmp_path / "maps" / "open_field.txt").write_text(open(src).read())
    summary = evaluate(cfg)
    assert cfg.env_id == CTF_ID
    games = (tmp_path / "out" / "games.csv").read_text().splitlines()
    assert len(games) == 1 + 2 * 6  # header + 2 games for each of the 6 pairs (main, main_v1, 2 bots)
    assert any(p.suffix == ".txt" for p in (tmp_path / "out").rglob("*")), summary


def test_play_ctf_with_injected_io(ckpt):
    from spade_rllib.play import MAZE_HINT, play_game

    lines = ["x", "d"] + [" "] * 400
    out: list[str] = []
    result = play_game(load_policy(ckpt), CTF_ID, lambda _: lines.pop(0) if lines else "q", out.append,
                       difficulty=1, seed=3)
    assert [line for line in out if line.startswith("invalid key")] == [f"invalid key 'x' ({MAZE_HINT})"]
    assert result.winner in ("human", "policy", "draw") and result.steps >= 2
    assert any("a" in line and "b" in line and "#" in line for line in out)  # the board with both bases
    with pytest.raises(PolicyLoadError, match="MazeRace map"):
        from spade_rllib.envs import Level

        play_game(load_policy(ckpt), CTF_ID, lambda _: "q", out.append,
                  level=Level.from_ascii((HELDOUT_DIR / "open_room.txt").read_text()))


def test_policy_loader_and_export(ckpt, tmp_path):
    policy = load_policy(ckpt, env_id=CTF_ID)
    assert policy.env_id == CTF_ID and policy.feature_size == 826 and policy.num_actions == 6
    from spade_rllib.envs import CaptureTheFlag

    env = CaptureTheFlag(difficulty=2, seed=0)
    obs, _ = env.reset(seed=0)
    assert 0 <= policy.act(obs["player_0"]) < 6
    with pytest.raises(PolicyLoadError, match="trained on CaptureTheFlag-v0, not on MazeRace-v0"):
        load_policy(ckpt, env_id=MAZERACE_ID)
    assert load_policy(ckpt, "main_v1").num_actions == 6  # league snapshot
    out = tmp_path / "ctf.onnx"
    proc = subprocess.run([sys.executable, "-m", "spade_rllib.export", "--checkpoint", str(ckpt), "--out", str(out)],
                          capture_output=True, text=True, timeout=180, check=True)
    summary = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out.stat().st_size > 0 and summary["max_abs_diff_vs_torch"] <= 1e-4


# ------------------------------------------------------------------------------------------ Ray runs
@pytest.mark.ray
def test_train_with_curriculum_and_heldout_evaluation(ray_session):
    from spade_rllib.rllib.algo_config import build_algo_config

    cfg = parse_config(tiny(env={"difficulty": None},
                            curriculum={"enabled": True, "strategy": "plr", "plr": {"capacity": 8},
                                        "uniform": {"size": [5, 7]}},  # short episodes: many finish per iteration
                            self_play={"opponent_mix": {"bot:raider": 0.3}},
                            evaluation={"interval": 1, "games": 2, "opponents": ["random", "bot:hybrid"],
                                        "heldout_levels": SMALL_MAPS[:1], "heldout_games": 2}))
    algo = build_algo_config(cfg).build_algo()
    try:
        first = algo.train()
        assert algo.heldout.poll(timeout=180), "held-out task did not finish"
        second = algo.train()
    finally:
        algo.stop()
    assert not math.isnan(second["eval"]["bot:hybrid"]["win_rate"])
    assert first["train"]["bot:raider"]["games"] + second["train"]["bot:raider"]["games"] > 0
    assert first["train"]["mirror"]["games"] > 0
    assert second["heldout"]["open_field"]["hybrid"]["games"] == 2.0
    assert second["curriculum"]["buffer_size"] > 0
    assert "tags" in second["counters"] and "captures_opponent" in second["counters"]


@pytest.mark.ray
def test_league_on_ctf(ray_session):
    from spade_rllib.rllib.algo_config import build_algo_config

    cfg = parse_config(tiny(league={"enabled": True, "every_n_iterations": 1, "win_rate_threshold": None,
                                    "num_opponent_slots": 2}))
    algo = build_algo_config(cfg).build_algo()
    try:
        results = [algo.train() for _ in range(3)]
        (comp,) = [c for c in algo.components if c.name == "league"]
        assert len(comp.league.snapshots()) == 3 and results[-1]["league"]["size"] == 4.0
        assert sum(comp.league.games(m) for m in comp.league.snapshots()) > 0
        assert np.isfinite(results[-1]["league"]["main_rating"])
    finally:
        algo.stop()


@pytest.mark.ray
def test_league_with_the_memory_map_and_its_convolutions(ray_session):
    """env.kwargs.seen_map + agent.model.map_channels through the whole pipeline: runners act, the learner
    trains, snapshots of main play in the league, main's weights carry the map's convolutions."""
    from spade_rllib.rllib.algo_config import build_algo_config

    cfg = parse_config(tiny(env={"kwargs": {"seen_map": 5}}, agent={"model": {"hidden": [16], "map_channels": [4]}},
                            league={"enabled": True, "every_n_iterations": 1, "win_rate_threshold": None,
                                    "num_opponent_slots": 2}))
    algo = build_algo_config(cfg).build_algo()
    try:
        results = [algo.train() for _ in range(3)]
        assert any("map_convs" in k for k in algo.main_weights())
        (comp,) = [c for c in algo.components if c.name == "league"]
        assert len(comp.league.snapshots()) == 3 and results[-1]["league"]["size"] == 4.0
        assert sum(comp.league.games(m) for m in comp.league.snapshots()) > 0  # the snapshots (map convs too) played
    finally:
        algo.stop()
