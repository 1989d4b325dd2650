"""bench/ablations/poker_peers.py: the peers count env steps as the league's runner does, bad command lines are
refused in one line, and a tiny bench runs end to end and resumes from its units. No Ray."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("pyspiel")
pytest.importorskip("torch")

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from bench.ablations import poker_peers as pp  # noqa: E402


def scripted(turn: int, legal) -> int:
    """A card-blind scripted player: the k-th decision of a hand plays legal[k % len(legal)] (the same hands in any env)."""
    legal = sorted(int(a) for a in legal)
    return legal[turn % len(legal)]


class Scripted:
    def __init__(self):
        self.turn = 0

    def step(self, time_step, is_evaluation=False):
        from open_spiel.python.rl_agent import StepOutput

        if time_step.last():
            self.turn = 0
            return None
        player = time_step.observations["current_player"]
        action = scripted(self.turn, time_step.observations["legal_actions"][player])
        self.turn += 1
        return StepOutput(action=action, probs=None)


def league_count(game_name: str, hands: int) -> int:
    """Env steps the league's runner counts for `hands` scripted hands: one per `Game.step` of the adapter it steps."""
    from spade_rllib.games.adapter import make_game_factory

    game = make_game_factory(game_name)()
    steps = 0
    for h in range(hands):
        obs = game.reset(seed=h)
        turn, done = 0, False
        while not done:
            (agent, o), = obs.items()
            action = scripted(turn, np.flatnonzero(o[-game.num_actions:] > 0))
            res = game.step({agent: action})
            steps += 1
            turn += 1
            obs, done = res.obs, res.done
    return steps


@pytest.mark.parametrize("game_name,hands,per_hand", [("kuhn_poker", 50, 3), ("leduc_poker", 40, 7)])
def test_peers_count_env_steps_as_the_league_does(game_name, hands, per_hand):
    # The scripted line is card-blind, so every hand has the same count in both envs. Kuhn: pass, bet, pass (fold).
    # Leduc (fold legal only facing a bet): check, raise, re-raise, call; check, raise, fold.
    env = pp.CountingEnv(game_name, seed=0)
    shared = Scripted()
    agents = [shared, shared]  # one turn counter per hand, as in league_count
    for _ in range(hands):
        pp.play_hand(env, agents)
    assert env.episodes == hands
    assert env.decisions == league_count(game_name, hands) == hands * per_hand


def test_psro_meta_game_simulations_count_decisions():
    psro_v2, _, _ = pp._psro_modules()
    env = pp.CountingEnv("kuhn_poker", seed=0)
    solver = pp.counting_psro(psro_v2, env).__new__(pp.counting_psro(psro_v2, env))
    solver._num_players, solver._game = 2, env.game
    from open_spiel.python.policy import FirstActionPolicy

    first = FirstActionPolicy(env.game)  # pass, pass: 2 decisions a hand
    solver.sample_episodes([first, first], 25)
    assert env.decisions == 50


def test_bad_arguments_are_refused_in_one_line(tmp_path, capsys):
    cases = [(["--game", "chess"], "--game"), (["--game", "kuhn", "--peers", "nfsp,dqn"], "--peers"),
             (["--game", "kuhn", "--seeds", "0"], "--seeds 0"), (["--game", "kuhn", "--minutes", "nan"], "--minutes nan"),
             (["--game", "kuhn", "--env-steps", "0"], "--env-steps 0"),
             (["--game", "kuhn", "--cfr-iterations", "0"], "--cfr-iterations 0"),
             (["--game", "kuhn", "--only-seeds", "5"], "--only-seeds"),
             (["--game", "kuhn", "--figure", str(tmp_path / "x.svg")], "--figure"),
             (["--game", "kuhn", "--out-dir", str(tmp_path / "f.txt")], "is a file")]
    (tmp_path / "f.txt").write_text("x")
    for argv, needle in cases:
        with pytest.raises(SystemExit) as e:
            pp.main(argv)
        err = capsys.readouterr().err.strip()
        assert e.value.code == 2 and len(err.splitlines()) == 1 and needle in err, (argv, err)
        assert not (tmp_path / "units").exists()


def test_tiny_bench_runs_and_resumes(tmp_path, monkeypatch, capsys):
    monkeypatch.setitem(pp.GRID, "kuhn", 150)
    monkeypatch.setitem(pp.PSRO_SETTINGS, "number_training_episodes", 10)
    monkeypatch.setitem(pp.PSRO_SETTINGS, "sims_per_entry", 10)
    monkeypatch.setitem(pp.PSRO_SETTINGS, "agent", {**pp.PSRO_SETTINGS["agent"], "hidden_layers_sizes": [16]})
    monkeypatch.setitem(pp.NFSP_SETTINGS, "kuhn", {**pp.NFSP_SETTINGS["kuhn"], "hidden_layers_sizes": [16]})
    out = tmp_path / "out"
    argv = ["--game", "kuhn", "--seeds", "1", "--env-steps", "300", "--cfr-iterations", "5", "--out-dir", str(out),
            "--max-units", "1", "--figure", str(tmp_path / "f.png")]
    assert pp.main(argv) == 0
    first = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert not first["complete"] and first["units_done"] == ["nfsp_seed0"] and first["units_missing"] == ["psro_seed0"]
    nfsp = json.loads((out / "units" / "nfsp_seed0.json").read_text())
    assert nfsp["env_steps"] >= 300 and nfsp["curve"]["env_steps"][0] >= 150
    assert all(0 < v <= 2 for v in nfsp["curve"]["exploitability"])  # Kuhn's largest payoff is 2
    cfr = json.loads((out / "units" / "cfr_plus_seed0.json").read_text())
    assert cfr["curve"]["iterations"] == [1, 2, 5] and cfr["curve"]["exploitability"][-1] < cfr["curve"]["exploitability"][0]
    assert (tmp_path / "f.png").stat().st_size > 0
    mtime = (out / "units" / "nfsp_seed0.json").stat().st_mtime
    assert pp.main(argv[:-4]) == 0  # the rest: psro
    captured = capsys.readouterr()
    last = json.loads(captured.out.strip().splitlines()[-1])
    assert last["complete"] and last["peers"]["nfsp"]["final"]["n"] == 1 and last["peers"]["psro"]["final"]["n"] == 1
    psro = json.loads((out / "units" / "psro_seed0.json").read_text())
    assert 20 <= psro["iterations"][0]["env_steps"] <= 30  # the first meta-game entry: 10 hands of 2-3 decisions
    steps = [it["env_steps"] for it in psro["iterations"]]
    assert steps[1] - steps[0] >= 2 * 11 * 2 + 3 * 10 * 2  # two best responses of > 10 hands, 3 new entries' sims
    assert (out / "units" / "nfsp_seed0.json").stat().st_mtime == mtime  # reused, not retrained
    assert "cached: nfsp seed 0" in captured.err and "cached: cfr_plus seed 0" in captured.err


def test_on_grid_holds_the_last_finished_point():
    raw = [(30, 0.4), (950, 0.3), (2100, 0.2)]
    assert pp.on_grid(raw, 1000, 2000) == {"env_steps": [1000, 2000], "exploitability": [0.3, 0.3]}
    assert pp.on_grid([(1500, 0.2)], 1000, 3000)["exploitability"] == [None, 0.2, 0.2]
