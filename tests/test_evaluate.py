"""League evaluation end to end: consistent CSVs, balanced seats, known-strength ordering, ratings
invariants, determinism (local and Ray), plots, replays, and one-line errors."""
from __future__ import annotations

import csv
import subprocess
import sys
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from spade_rllib.evaluate import EvalConfig, evaluate, main
from spade_rllib.evaluation.match_engine import DRAW, GameResult
from spade_rllib.evaluation.replays import pick_replays
from spade_rllib.evaluation.eval_report import fit_ratings, plot_progress
from spade_rllib.evaluation.schedule import ScheduleError, make_schedule, parse_levels
from spade_rllib.testing.tiny_checkpoints import save_tiny_checkpoint, write_progress_csv

# 7x7 maps, each unfair by one step, where tagging decides rusher vs rusher_tagger: the bot that
# starts one step behind tags the one ahead when they are adjacent. Found by search over open rooms;
# rusher_tagger wins these from both seats, rusher beats random.
TAG_LEVELS = {
    "tag_a": "#######\n#BA...#\n#.....#\n#.....#\n#.....#\n#....F#\n#######",
    "tag_b": "#######\n#.BA..#\n#.....#\n#....F#\n#.....#\n#.....#\n#######",
    "tag_c": "#######\n#.....#\n#.F...#\n#.....#\n#..AB.#\n#.....#\n#######",
}


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    root = tmp_path_factory.mktemp("evaluate")
    levels = root / "levels"
    levels.mkdir()
    for name, text in TAG_LEVELS.items():
        (levels / f"{name}.txt").write_text(text + "\n")
    return {
        "a": save_tiny_checkpoint(root / "run_a", "MazeRace-v0", snapshots=1, progress_rows=12, seed=0),
        "b": save_tiny_checkpoint(root / "run_b", "MazeRace-v0", seed=1),
        "c4": save_tiny_checkpoint(root / "c4_run", "connect_four_v3", seed=2),
        "levels": levels,
        "root": root,
    }


def read(path: Path) -> list[dict]:
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


@pytest.fixture(scope="module")
def two_runs(setup, tmp_path_factory):
    """Run A (main + 1 snapshot) vs run B's main plus the three bots, played locally."""
    out = tmp_path_factory.mktemp("eval_two_runs")
    cfg = EvalConfig(checkpoints=[str(setup["a"])], vs_checkpoints=[str(setup["b"])], levels=str(setup["levels"]),
                     games_per_pair=4, seed=7, replays=2, out=str(out), workers=0, bootstrap=50, progress=False)
    return cfg, evaluate(cfg), out


def test_pool_and_counts_add_up(two_runs):
    cfg, outcome, out = two_runs
    players = ["run_a/main", "run_a/main_v1", "run_b/main", "random", "rusher", "rusher_tagger"]
    assert outcome["players"] == players and cfg.main_id == "run_a/main"
    n_pairs = len(players) * (len(players) - 1) // 2
    games = read(out / "games.csv")
    assert len(games) == n_pairs * 4
    payoff = read(out / "payoff.csv")
    assert len(payoff) == len(players) * (len(players) - 1)
    cell = {(r["player"], r["opponent"]): {k: int(v) for k, v in r.items() if k not in ("player", "opponent", "score")}
            for r in payoff}
    for (a, b), c in cell.items():
        assert c["games"] == c["wins"] + c["draws"] + c["losses"] == 4
        mirror = cell[(b, a)]
        assert (c["wins"], c["draws"], c["losses"]) == (mirror["losses"], mirror["draws"], mirror["wins"])
        assert c["games_seat0"] == c["games_seat1"] == 2  # seats balanced
    seat0 = Counter(g["seat0"] for g in games)
    seat1 = Counter(g["seat1"] for g in games)
    assert all(seat0[p] == seat1[p] == (len(players) - 1) * 2 for p in players)
    ratings = read(out / "ratings.csv")
    assert [int(r["rank"]) for r in ratings] == list(range(1, len(players) + 1))
    assert sum(int(r["wins"]) for r in ratings) == sum(int(r["losses"]) for r in ratings)
    assert sum(int(r["games"]) for r in ratings) == 2 * len(games)
    decided = sum(1 for g in games if int(g["winner_seat"]) != DRAW)
    assert sum(int(r["wins"]) for r in ratings) == decided
    levels = read(out / "levels.csv")
    assert {r["level_id"] for r in levels} == set(TAG_LEVELS)
    main_games = [g for g in games if "run_a/main" in (g["seat0"], g["seat1"])]
    assert sum(int(r["games"]) for r in levels) == len(main_games)


def test_known_strength_ordering(two_runs):
    _, outcome, _ = two_runs
    elo = {r["player"]: r["elo"] for r in outcome["ratings"]}
    assert elo["rusher_tagger"] > elo["rusher"] > elo["random"]
    by_player = {r["player"]: r for r in outcome["ratings"]}
    assert by_player["rusher_tagger"]["elo_low"] > by_player["rusher"]["elo"]


def test_plots_report_and_replays(two_runs):
    from PIL import Image

    _, outcome, out = two_runs
    expected = {"payoff_heatmap", "ratings", "learning_curves", "curriculum", "league"}
    assert set(outcome["plots"]) == expected
    report = (out / "report.md").read_text()
    for name in expected:
        png = out / f"{name}.png"
        assert png.stat().st_size > 5000 and f"({name}.png)" in report
        pixels = np.asarray(Image.open(png).convert("L"))
        assert pixels.std() > 5  # not a blank canvas
    replays = outcome["replays"]
    assert len(replays) == 2
    assert any(r["outcome"] == "loss" for r in replays)  # the tiny random net loses to the bots
    lengths = {int(g["index"]): int(g["length"]) for g in read(out / "games.csv")}
    for r in replays:
        assert r["frames"] == lengths[r["index"]] + 1  # the start position, then one frame per step
        gif = Image.open(out / r["gif"])
        assert gif.n_frames >= (2 if r["outcome"] == "loss" else 1)  # PIL merges identical frames
        transcript = (out / r["transcript"]).read_text()
        assert transcript.count("step ") >= 2 and "result:" in transcript
    assert outcome["console"].splitlines()[2].split()[1] == outcome["ratings"][0]["player"]


def test_deterministic_given_seed(two_runs, tmp_path):
    cfg, _, out = two_runs
    again = EvalConfig(**{**cfg.__dict__, "out": str(tmp_path / "again"), "replays": 0})
    evaluate(again)
    for name in ("games.csv", "payoff.csv", "ratings.csv", "levels.csv"):
        assert (out / name).read_text() == (tmp_path / "again" / name).read_text(), name
    other = EvalConfig(**{**cfg.__dict__, "out": str(tmp_path / "other"), "replays": 0, "seed": 8})
    evaluate(other)
    assert (out / "games.csv").read_text() != (tmp_path / "other" / "games.csv").read_text()


@pytest.mark.ray
def test_ray_tasks_match_local(setup, ray_session, tmp_path):
    common = dict(checkpoints=[str(setup["a"])], levels="generated:2@3", games_per_pair=2, seed=3, replays=0,
                  bootstrap=20, progress=False, bots=["random", "rusher"])
    local = evaluate(EvalConfig(out=str(tmp_path / "local"), workers=0, **common))
    remote = evaluate(EvalConfig(out=str(tmp_path / "ray"), workers=2, **common))
    assert [r.to_row() for r in local["results"]] == [r.to_row() for r in remote["results"]]
    assert (tmp_path / "local" / "ratings.csv").read_text() == (tmp_path / "ray" / "ratings.csv").read_text()


def test_connect_four_masked_evaluation(setup, tmp_path):
    outcome = evaluate(EvalConfig(checkpoints=[str(setup["c4"])], games_per_pair=6, seed=0, replays=1,
                                  out=str(tmp_path), workers=0, bootstrap=20, progress=False))
    # The game's default bots (spade_rllib.bots.c4_bots.DEFAULT_BOTS): every bot but the slow mcts1000.
    assert outcome["players"] == ["main", "random", "mcts10", "tactical", "mcts100", "lookahead"]
    assert len(outcome["results"]) == 90  # 15 pairs x 6 games; an illegal move would have raised in the engine
    vs_main = [r.score("lookahead") for r in outcome["results"] if {r.seat0, r.seat1} == {"lookahead", "main"}]
    assert len(vs_main) == 6 and sum(vs_main) >= 5  # the negamax bot beats an untrained module
    assert all(r.reason in ("four", "full") for r in outcome["results"])
    assert (tmp_path / outcome["replays"][0]["gif"]).stat().st_size > 0


def test_a_run_with_its_own_observation_kwargs_is_evaluated_and_loaded_with_them(tmp_path):
    """A CaptureTheFlag run trained with env.kwargs that change the observation (a smaller view, the memory map)
    is loaded and evaluated with those kwargs from its config.yaml, not with the catalog's defaults."""
    from spade_rllib.players.policy import load_policy

    kwargs = {"view_radius": 3, "seen_map": 5, "draw_reward": -0.1}
    ckpt = save_tiny_checkpoint(tmp_path / "run", "CaptureTheFlag-v0", seed=3, env_kwargs=kwargs)
    policy = load_policy(ckpt, env_id="CaptureTheFlag-v0")
    assert policy.feature_size == 7 * 7 * 10 + 16 + 5 * 5 * 5  # the memory map: 5 channels per block
    outcome = evaluate(EvalConfig(checkpoints=[str(ckpt)], levels="generated:1@2", games_per_pair=2, seed=0,
                                  replays=1, out=str(tmp_path / "eval"), workers=0, bootstrap=10, progress=False,
                                  bots=["rusher"], league=False))
    assert outcome["players"] == ["main", "rusher"] and len(outcome["results"]) == 2


def _result(i, a, b, winner):
    return GameResult(i, a, b, "l", i, winner, "x", 1)


def test_ratings_invariants():
    players = ["p0", "p1", "p2", "p3"]
    rng = np.random.default_rng(0)
    strength = {"p0": 0.0, "p1": 1.0, "p2": 2.0, "p3": 3.0}
    results = []
    for i in range(400):
        a, b = rng.choice(players, 2, replace=False)
        p_a = 1 / (1 + np.exp(strength[b] - strength[a]))
        results.append(_result(i, a, b, 0 if rng.uniform() < p_a else 1))
    fit = fit_ratings(players, results, n_bootstrap=100, seed=0)
    assert abs(fit.elo.mean() - 1000.0) < 1e-6  # anchored at mean 1000
    assert np.all(fit.low <= fit.elo + 1e-9) and np.all(fit.elo <= fit.high + 1e-9)
    assert list(np.argsort(fit.elo)) == [0, 1, 2, 3]  # ordered as the true strengths
    gaps = np.diff(fit.elo)
    assert np.all(np.abs(gaps - 173.7) < 80)  # one natural-log unit of odds is ~173.7 Elo
    # invariant to the order of players and to swapping seats (with the result flipped)
    perm = players[::-1]
    fit_perm = fit_ratings(perm, results, n_bootstrap=100, seed=0)
    assert np.allclose(fit_perm.elo[::-1], fit.elo, atol=1e-6)
    swapped = [_result(r.index, r.seat1, r.seat0, 1 - r.winner_seat) for r in results]
    assert np.allclose(fit_ratings(players, swapped, n_bootstrap=10).elo, fit.elo, atol=1e-6)
    # symmetric results give equal ratings; all draws too
    even = [_result(i, "p0", "p1", i % 2) for i in range(20)]
    assert np.allclose(fit_ratings(["p0", "p1"], even, n_bootstrap=10).elo, 1000.0)
    draws = [_result(i, "p0", "p1", DRAW) for i in range(20)]
    assert np.allclose(fit_ratings(["p0", "p1"], draws, n_bootstrap=10).elo, 1000.0)
    # unbeaten players stay finite
    sweep = [_result(i, "p0", "p1", 0) for i in range(20)]
    assert np.all(np.isfinite(fit_ratings(["p0", "p1"], sweep, n_bootstrap=10).elo))


def test_schedule_balanced_and_sampled():
    levels = parse_levels("generated:3@2", "MazeRace-v0", 0)
    games = make_schedule(["a", "b", "c"], levels, 3, seed=1)  # 3 rounds up to 4
    assert len(games) == 3 * 4
    for pair in (("a", "b"), ("a", "c"), ("b", "c")):
        seats = Counter((g.seat0, g.seat1) for g in games if {g.seat0, g.seat1} == set(pair))
        assert seats[pair] == seats[pair[::-1]] == 2
    # both seatings of a level share one seed
    assert games[0].seed == games[1].seed and games[0].level_index == games[1].level_index
    many = [f"s{i}" for i in range(20)]
    sampled = make_schedule(many, levels, 2, seed=0, anchors=["s0"], max_round_robin=8, sampled_opponents=3)
    pairs = {frozenset((g.seat0, g.seat1)) for g in sampled}
    assert len(pairs) < 20 * 19 // 2
    assert all(frozenset(("s0", p)) in pairs for p in many[1:])  # anchors meet everyone
    assert all(sum(p in pr for pr in pairs) >= 3 for p in many)
    assert sampled == make_schedule(many, levels, 2, seed=0, anchors=["s0"], max_round_robin=8, sampled_opponents=3)


def test_pick_replays_includes_a_loss():
    results = [_result(0, "m", "x", 0), _result(1, "x", "m", 1), _result(2, "m", "x", DRAW), _result(3, "x", "m", 0)]
    chosen = pick_replays(results, "m", 2)
    assert [r.index for r in chosen] == [0, 3]
    assert pick_replays(results[:3], "m", 5) == results[:3]


def test_progress_plots_only_for_present_columns(tmp_path):
    full = tmp_path / "full.csv"
    write_progress_csv(full, 10)
    assert set(plot_progress(full, tmp_path)) == {"learning_curves", "curriculum", "league"}
    partial = tmp_path / "partial.csv"
    partial.write_text("training_iteration,time_total_s,num_env_steps_sampled_lifetime,env_runners/episode_return_mean\n"
                       "1,10,1000,0.1\n2,20,2000,0.3\n")
    (tmp_path / "p").mkdir()
    written = plot_progress(partial, tmp_path / "p")
    assert set(written) == {"learning_curves"} and written["learning_curves"].stat().st_size > 0


@pytest.mark.parametrize("args,needle", [
    (["--levels", "generated:x@3"], "expected generated:N@DIFFICULTY"),
    (["--levels", "generated:2@11"], "difficulty must be in [1, 10]"),
    (["--levels", "/nonexistent/levels"], "not 'heldout', not a directory"),
    (["--games-per-pair", "0"], "--games-per-pair = 0"),
    (["--bots", "nobot"], "'nobot' does not play MazeRace-v0"),
    (["--env", "connect_four_v3"], "trained on MazeRace-v0, not on connect_four_v3"),
])
def test_bad_arguments_one_line(setup, tmp_path, capsys, args, needle):
    rc = main(["--checkpoint", str(setup["a"]), "--workers", "0", "--out", str(tmp_path), *args])
    err = capsys.readouterr().err.strip()
    assert rc == 2 and needle in err and len(err.splitlines()) == 1, err


def test_level_sources():
    heldout = parse_levels("heldout", "MazeRace-v0", 0)
    assert heldout and all(e.source == "heldout" and e.level is not None for e in heldout)
    assert [e.level_id for e in parse_levels(None, "MazeRace-v0", 0)] == [e.level_id for e in heldout]
    gen = parse_levels("generated:2@4", "MazeRace-v0", 5)
    assert [e.level.to_ascii() for e in gen] == [e.level.to_ascii() for e in parse_levels("generated:2@4", "MazeRace-v0", 5)]
    assert gen[0].level.to_ascii() != parse_levels("generated:2@4", "MazeRace-v0", 6)[0].level.to_ascii()
    team = parse_levels("generated:1@4", "MazeRace-v0", 0, agents_per_team=2)
    assert team[0].level.agents_per_team == 2
    assert [e.level_id for e in parse_levels("heldout", "connect_four_v3", 0)] == ["board"]


def test_empty_levels_dir(setup, tmp_path, capsys):
    with pytest.raises(ScheduleError, match="no \\*.txt maps"):
        parse_levels(str(tmp_path), "MazeRace-v0", 0)


def test_cli_smoke(setup, tmp_path):
    out = tmp_path / "cli"
    proc = subprocess.run([sys.executable, "-m", "spade_rllib.evaluate", "--checkpoint", str(setup["a"]),
                           "--levels", str(setup["levels"]), "--games-per-pair", "2", "--workers", "0",
                           "--replays", "1", "--bootstrap", "20", "--no-progress", "--out", str(out)],
                          capture_output=True, text=True, timeout=300, check=True)
    assert "rusher_tagger" in proc.stdout and "report.md" in proc.stdout
    for name in ("games.csv", "payoff.csv", "ratings.csv", "levels.csv", "report.md", "payoff_heatmap.png"):
        assert (out / name).stat().st_size > 0
