"""``league:average``: the league distilled into one network (`spade_rllib.players.league_average`), on tiny checkpoints
with a real league state (random modules, no training; Ray is imported, never started).

Kuhn: the network's exact exploitability matches the mixture's and the table its export writes (scored by
OpenSpiel's own Python code); Connect Four: sampled distillation, one ONNX file that plays and is scored by
`evaluate`; bad arguments and a recurrent main refused in one line before any fitting."""
from __future__ import annotations

import json
import pickle
from pathlib import Path

import numpy as np
import pytest

from spade_rllib.artifacts.checkpoint_layout import ALGORITHM_STATE_FILE, COMPONENTS_STATE_KEY, LEAGUE_COMPONENT, LEAGUE_CORE_KEY
from spade_rllib.league import League, LeagueConfig
from spade_rllib.players.league_average import (
    AVERAGE_MODULE_ID, DistillSettings, check_settings, load_average_policy, openspiel_exploitability,
)
from spade_rllib.players.league_player import league_mode
from spade_rllib.players.policy import PolicyLoadError, load_policy

C4 = "connect_four_v3"
KUHN = "kuhn_poker"


def league_checkpoint(root: Path, env_id: str, snapshots: int = 2, model: dict | None = None, scale: float = 3.0,
                      hidden=(16,)) -> Path:
    """A trial directory with one checkpoint: main (random) and a league of `snapshots` random snapshots of main's
    architecture, stored as SpadePPO stores `League.state_dict()`; weights scaled by `scale` (sharper policies)."""
    import gymnasium as gym
    import torch

    from spade_rllib.games.adapter import make_game_factory
    from spade_rllib.testing.tiny_checkpoints import _write_modules, build_module

    game = make_game_factory(env_id)()
    spaces = (gym.spaces.Box(-np.inf, np.inf, (game.obs_size,), np.float32), gym.spaces.Discrete(game.num_actions),
              game.mask_size)
    modules = []
    for k in range(snapshots + 1):
        _, module = build_module(env_id, hidden, seed=k, model=model, spaces=spaces)
        with torch.no_grad():
            for p in module.parameters():
                p.mul_(scale)
        modules.append(module)
    ckpt = root / "checkpoint_000000"
    _write_modules(root, ckpt, env_id, {"main": modules[0]})
    league = League(LeagueConfig(win_rate_threshold=None, every_n_iterations=1, include_random=False))
    for k, module in enumerate(modules[1:], start=1):
        league.add_snapshot({n: np.asarray(v) for n, v in module.get_state().items()}, k)
    with open(ckpt / ALGORITHM_STATE_FILE, "wb") as f:
        pickle.dump({COMPONENTS_STATE_KEY: {LEAGUE_COMPONENT: {LEAGUE_CORE_KEY: league.state_dict()}}}, f)
    return ckpt


@pytest.fixture(scope="module")
def kuhn(tmp_path_factory):
    pytest.importorskip("pyspiel")
    return league_checkpoint(tmp_path_factory.mktemp("kuhn") / "trial", KUHN)


@pytest.fixture(scope="module")
def c4(tmp_path_factory):
    return league_checkpoint(tmp_path_factory.mktemp("c4") / "trial", C4)


def test_kuhn_average_network_matches_the_mixture_and_its_exported_table(kuhn, tmp_path):
    from spade_rllib.export import main as export_main
    from spade_rllib.export import onnx_logits
    from spade_rllib.games.exploitability import exploitability, exploitability_of_table, info_states, logits_policy
    from spade_rllib.players.league_export import read_average_policy
    from spade_rllib.players.league_player import policy_fn

    player = load_policy(kuhn.parent, AVERAGE_MODULE_ID)
    mixture = load_policy(kuhn.parent, "league:uniform")
    assert player.module_id == AVERAGE_MODULE_ID and player.distilled["targets"] == "exact"
    assert np.abs(player.table - mixture.table).max() < 1e-3
    states = info_states(KUHN)
    mixed = exploitability_of_table(KUHN, mixture.table).exploitability
    network = exploitability(policy_fn(player), KUHN).exploitability
    main = exploitability(policy_fn(load_policy(kuhn.parent)), KUHN).exploitability
    assert abs(network - mixed) < 2e-3 and abs(main - mixed) > 0.01, (network, mixed, main)  # fitted, not main
    assert player.distilled["exploitability"] == pytest.approx(network, abs=1e-5)
    assert player.distilled["mixture_exploitability"] == pytest.approx(mixed, abs=1e-5)

    out = tmp_path / "export"
    assert export_main(["--checkpoint", str(kuhn.parent), "--module", AVERAGE_MODULE_ID, "--out", str(out)]) == 0
    manifest = json.loads((out / "mixture.json").read_text())
    (member,) = manifest["members"]
    assert manifest["mode"] == "average" and member["weight"] == 1.0 and member["max_abs_diff_vs_torch"] < 1e-4
    assert manifest["distilled"]["exploitability"] == pytest.approx(network, abs=1e-5)
    game, table = read_average_policy(out / manifest["average_policy"])
    exported = np.asarray([table[k] for k in states.keys])
    assert np.abs(exported - player.table).max() < 1e-8
    assert openspiel_exploitability(out / manifest["average_policy"]) == pytest.approx(network, abs=1e-6)
    onnx = logits_policy(lambda obs: onnx_logits(out / member["onnx"], obs.astype(np.float32)))
    assert exploitability(onnx, KUHN).exploitability == pytest.approx(network, abs=1e-4)  # the ONNX file plays it


def test_average_is_cached_beside_the_run_and_refitted_when_damaged(kuhn, monkeypatch):
    import spade_rllib.players.league_average as la

    first = load_policy(kuhn.parent, AVERAGE_MODULE_ID)  # fitted (or cached by the test above)
    (cache,) = (kuhn.parent / la.CACHE_DIR).glob("*.npz")

    def no_fit(*a, **k):
        raise AssertionError("fitted again")

    monkeypatch.setattr(la, "fit", no_fit)
    again = load_policy(kuhn.parent, AVERAGE_MODULE_ID)
    assert np.allclose(again.table, first.table, atol=1e-7)
    cache.write_bytes(b"damaged")
    with pytest.raises(AssertionError, match="fitted again"):
        load_policy(kuhn.parent, AVERAGE_MODULE_ID)
    monkeypatch.undo()
    refit = load_policy(kuhn.parent, AVERAGE_MODULE_ID)
    assert np.allclose(refit.table, first.table, atol=1e-5)
    other = load_average_policy(kuhn.parent, load_policy, settings=DistillSettings(source="nash"), cache=False)
    assert other.distilled["source"] == "league:nash"


def test_connect_four_average_is_one_onnx_file_that_plays_and_is_scored(c4, tmp_path):
    from spade_rllib.evaluate import main as evaluate_main
    from spade_rllib.export import check_exported, export_league

    settings = DistillSettings(games=10, steps=150, batch_size=128)
    player = load_average_policy(c4.parent, load_policy, settings=settings, cache=False)
    assert player.table is None and player.distilled["targets"] == "sampled"
    sampled, fitted = player.distilled["sampled"], player.distilled["fit"]
    assert sampled["games"] == 10 and sampled["decisions"] >= 10 * 7
    assert fitted["rows"] + sampled["heldout_decisions"] == sampled["decisions"]  # the 10th game held out
    assert fitted["cross_entropy"] < fitted["initial_cross_entropy"], fitted  # it learned the members' play
    assert sampled["heldout_kl"] < sampled["heldout_kl_main"], sampled  # ... and nearer the mixture than main
    written = export_league(player, tmp_path / "c4_export")
    (member,) = written.members
    assert member["onnx"] == "league_average.onnx" and member["max_abs_diff_vs_torch"] < 1e-4
    assert check_exported(player, tmp_path / "c4_export" / member["onnx"]) < 1e-4
    from pettingzoo.classic import connect_four_v3

    env = connect_four_v3.env()
    env.reset(seed=3)
    rng = np.random.default_rng(0)
    for _ in range(12):  # legal moves, argmax and sampled
        if any(env.terminations.values()):
            break
        obs = env.observe(env.agent_selection)
        action = player.act(obs, deterministic=bool(rng.integers(2)), rng=rng)
        assert obs["action_mask"][action] == 1
        env.step(action)
    out = tmp_path / "eval"
    code = evaluate_main(["--checkpoint", str(c4.parent), "--league-player", "average", "--no-league", "--bots", "none",
                          "--games-per-pair", "2", "--workers", "0", "--replays", "0", "--no-progress",
                          "--stochastic", "--out", str(out)])
    assert code == 0
    assert "league:average,module:league:average" in (out / "ratings.csv").read_text()


def test_bad_arguments_refused_in_one_line_before_any_fit(tmp_path, capsys):
    from spade_rllib.export import main as export_main

    with pytest.raises(PolicyLoadError, match="did you mean 'average'"):
        league_mode("league:averge")
    assert league_mode("league:average") == "average"
    for bad, match in [(dict(steps=float("nan")), "steps"), (dict(games=-1), "games"), (dict(steps=True), "steps"),
                       (dict(lr=float("nan")), "lr"), (dict(source="unifrom"), "did you mean 'uniform'")]:
        with pytest.raises(ValueError, match=match):
            check_settings(DistillSettings(**bad))
    missing = str(tmp_path / "no_such_run")  # the arguments are refused before the checkpoint is even looked at
    for flags, message in [(["--average-steps", "nan"], "--average-steps = 'nan'"),
                           (["--average-games", "-5"], "--average-games = -5"),
                           (["--average-from", "nsah"], "did you mean 'nash'"),
                           (["--average-seed", "x"], "--average-seed = 'x'")]:
        assert export_main(["--checkpoint", missing, "--module", AVERAGE_MODULE_ID, "--out", str(tmp_path / "o"),
                            *flags]) == 2
        err = capsys.readouterr().err.strip()
        assert message in err and len(err.splitlines()) == 1, err
    assert export_main(["--checkpoint", missing, "--module", "main", "--out", str(tmp_path / "m.onnx"),
                        "--average-games", "9"]) == 2
    assert "only for --module league:average" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()


def test_recurrent_main_and_leagueless_checkpoints_refused(tmp_path):
    from spade_rllib.testing.tiny_checkpoints import save_tiny_checkpoint

    lstm = league_checkpoint(tmp_path / "lstm", C4, snapshots=1,
                             model={"use_lstm": True, "lstm_cell_size": 8, "max_seq_len": 4})
    with pytest.raises(PolicyLoadError, match="main is recurrent") as e:
        load_policy(lstm.parent, AVERAGE_MODULE_ID)
    assert "\n" not in str(e.value)
    assert not (lstm.parent / "league_average").exists()
    plain = save_tiny_checkpoint(tmp_path / "plain", C4)
    with pytest.raises(PolicyLoadError, match="holds no league"):
        load_policy(plain.parent, AVERAGE_MODULE_ID)


def test_capture_the_flag_average_is_fitted_from_the_mixtures_games(tmp_path):
    """A level game (parallel moves, levels drawn by the env): the sampled fit runs and generalises to held-out
    games better than main alone does."""
    ckpt = league_checkpoint(tmp_path / "ctf", "CaptureTheFlag-v0")
    player = load_average_policy(ckpt.parent, load_policy, settings=DistillSettings(games=10, steps=100), cache=False)
    sampled = player.distilled["sampled"]
    assert sampled["decisions"] == 2 * sampled["steps"]  # 1v1: both agents decide at every step
    assert sampled["heldout_kl"] < sampled["heldout_kl_main"], sampled
    assert player.recurrent is False and player.table is None


def test_sampling_stops_starting_games_at_the_decision_cap(c4):
    from spade_rllib.games.adapter import make_game_factory
    from spade_rllib.players.league_average import sample_mixture_games

    mixture = load_policy(c4.parent, "league:uniform")
    feats, masks, targets, stats = sample_mixture_games(mixture, make_game_factory(C4), games=50, max_decisions=30)
    assert 30 <= stats["decisions"] < 30 + 42 and stats["games"] < 50  # the game that passed the cap is finished
    assert feats.shape[0] == masks.shape[0] == targets.shape[0] == stats["decisions"]
    assert np.allclose(targets.sum(axis=1), 1.0, atol=1e-5) and (targets[masks == 0] == 0).all()


def test_average_as_the_training_time_mixture_is_refused_with_a_pointer():
    """`evaluation.exploitability_mixture: average` is one line that says where `league:average` is scored."""
    from spade_rllib.config.run_config import ConfigError, parse_config

    with pytest.raises(ConfigError, match=r"'average': not allowed.*league:average.*evaluate --exploitability"):
        parse_config({"env": {"id": "kuhn_poker"}, "evaluation": {"exploitability_mixture": "average"}})
