"""Evaluation of a role game's run and the league's refusal of a free-for-all (no Ray, no training).

A tiny synthetic role checkpoint of MPE's `simple_tag_v3` (`save_tiny_role_checkpoint`: random modules
`main_predator` (16 observations) and `main_prey` (14), two frozen snapshots per role main, the run's
config.yaml) is evaluated from its run directory without `--env`: each role's main against the other
role's main, snapshots and `random`, games seated by role, per-role payoff and rating tables, replays.
"""
from __future__ import annotations

import csv

import numpy as np
import pytest

from spade_rllib.core.validation import ConfigError

pytest.importorskip("mpe2")

TAG = "mpe2:simple_tag_v3"
TAG_ROLES = {"adversary": "predator", "agent": "prey"}
PREDATORS = ["main_predator", "main_predator_v1", "main_predator_v2", "random_predator"]
PREY = ["main_prey", "main_prey_v1", "main_prey_v2", "random_prey"]


@pytest.fixture(scope="module")
def tag_run(tmp_path_factory):
    from spade_rllib.testing import save_tiny_role_checkpoint

    run = tmp_path_factory.mktemp("tag_run")
    save_tiny_role_checkpoint(run, TAG, {"max_cycles": 12}, TAG_ROLES, hidden=(8,), snapshots=2)
    return run


def _rows(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def test_a_role_run_evaluates_per_role_seated_by_role(tag_run, tmp_path, capsys):
    from spade_rllib.evaluate import main as evaluate_main

    out = tmp_path / "eval"
    argv = ["--checkpoint", str(tag_run), "--out", str(out), "--workers", "0", "--games-per-pair", "2",
            "--replays", "1", "--bootstrap", "20", "--no-progress"]
    assert evaluate_main(argv) == 0
    console = capsys.readouterr().out
    assert "role predator:" in console and "role prey:" in console
    games = _rows(out / "games.csv")
    # seat 0 is always a predator player, seat 1 a prey player; each main meets every player of the other role once
    assert all(g["seat0"] in PREDATORS and g["seat1"] in PREY for g in games)
    pairs = {(g["seat0"], g["seat1"]) for g in games}
    assert pairs == {("main_predator", p) for p in PREY} | {(p, "main_prey") for p in PREDATORS}
    assert len(games) == 2 * len(pairs) == 14
    for role, players in (("predator", PREDATORS), ("prey", PREY)):
        ratings = _rows(out / f"ratings_{role}.csv")
        assert sorted(r["player"] for r in ratings) == sorted(players)
        assert [int(r["rank"]) for r in ratings] == [1, 2, 3, 4]
        payoff = _rows(out / f"payoff_{role}.csv")
        assert {r["player"] for r in payoff} == set(players)
        assert all(r["opponent"] not in players for r in payoff)  # a role's payoffs are against the other role
        main = f"main_{role}"
        assert sum(int(r["games"]) for r in payoff if r["player"] == main) == 8  # 4 opponents x 2 games
        scores = [r.score(main) for r in map(_result, games) if main in (r.seat0, r.seat1)]
        row = next(r for r in ratings if r["player"] == main)
        assert float(row["score"]) == pytest.approx(np.mean(scores), abs=1e-4)
    report = (out / "report.md").read_text()
    assert "## Ratings: role predator" in report and "## Ratings: role prey" in report
    assert "predator (seat 0: adversary_0, adversary_1, adversary_2), prey (seat 1: agent_0)" in report
    # replays of each role's main; simple_tag renders rgb_array: GIFs and transcripts
    replays = sorted(p.name for p in (out / "replays").iterdir())
    assert any(n.endswith(".gif") for n in replays) and any(n.endswith(".txt") for n in replays)
    for transcript in (out / "replays").glob("*.txt"):  # the header names who plays each role's agents
        header = transcript.read_text().splitlines()[0]
        assert any(f"adversary_0+adversary_1+adversary_2 = {p}, agent_0 = " in header for p in PREDATORS), header


def _result(row):
    from spade_rllib.evaluation.match_engine import GameResult

    return GameResult(int(row["index"]), row["seat0"], row["seat1"], row["level_id"], int(row["seed"]),
                      int(row["winner_seat"]), row["reason"], int(row["length"]))


class _Recorder:
    """A player that records which agents it was asked to move and plays action 0."""

    def __init__(self, name):
        from spade_rllib.evaluation.players import PlayerSpec

        self.spec = PlayerSpec(name, "bot", name)
        self.agents = set()

    def new_game(self, seed):
        pass

    def act(self, env, agent, obs, mask, rng):
        self.agents.add((agent, np.asarray(obs).shape[0]))
        return 0


def test_play_game_seats_every_agent_of_a_role_with_that_roles_player():
    from spade_rllib.evaluation.match_engine import GameSpec, LevelEntry, MatchError, check_two_teams, play_game

    roles = {"adversary_0": "predator", "adversary_1": "predator", "adversary_2": "predator", "agent_0": "prey"}
    setup = {"kwargs": {"max_cycles": 4}, "roles": roles}
    predator, prey = _Recorder("p"), _Recorder("q")
    record = play_game(TAG, [predator, prey], LevelEntry("board"), GameSpec(0, "p", "q", 0, 7), setup=setup)
    assert predator.agents == {("adversary_0", 16), ("adversary_1", 16), ("adversary_2", 16)}
    assert prey.agents == {("agent_0", 14)}
    assert record.result.winner_seat in (-1, 0, 1) and record.result.length > 0
    with pytest.raises(MatchError, match="has 4 teams"):  # without roles: four teams, not two seats
        check_two_teams(TAG, setup={"kwargs": {"max_cycles": 4}})
    with pytest.raises(MatchError, match="has roles a, b, c; evaluation plays games of two roles"):
        check_two_teams(TAG, setup={"kwargs": {"max_cycles": 4}, "roles": {"adversary_0": "a", "adversary_1": "b",
                                                                            "adversary_2": "c", "agent_0": "c"}})


def test_a_role_run_is_evaluated_alone_and_a_free_for_all_is_refused(tag_run, tmp_path, capsys):
    from spade_rllib.evaluate import main as evaluate_main

    argv = ["--checkpoint", str(tag_run), "--vs-checkpoint", str(tag_run), "--out", str(tmp_path / "e"),
            "--workers", "0"]
    assert evaluate_main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "is a role game's run" in err and "evaluate it alone" in err, err
    from spade_rllib.evaluate import playable_env_id
    from spade_rllib.players.policy import PolicyLoadError

    with pytest.raises(PolicyLoadError, match=r"has 8 teams .*a free-for-all of more than two teams is not evaluated"):
        playable_env_id("pettingzoo.sisl:pursuit_v5", [], None)


def test_a_league_on_a_free_for_all_is_one_line_before_ray():
    """pursuit_v5: 8 pursuers, each its own team; a league records two-team games only."""
    from spade_rllib.config.run_config import parse_config

    env = {"id": "pettingzoo.sisl:pursuit_v5", "kwargs": {"max_cycles": 5}}
    with pytest.raises(ConfigError) as err:
        parse_config({"env": env, "league": {"enabled": True}})
    message = str(err.value)
    assert "\n" not in message and "has 8 teams (a free-for-all)" in message, message
    assert "set env.teams with two teams" in message and "league.enabled: false" in message
    parse_config({"env": env, "league": {"enabled": False}})  # no league: free-for-all trains
    halves = {"A": [f"pursuer_{i}" for i in range(4)], "B": [f"pursuer_{i}" for i in range(4, 8)]}
    parse_config({"env": {**env, "teams": halves}, "league": {"enabled": True}})  # two teams: a league
    with pytest.raises(ConfigError, match="has 8 teams"):  # free_for_all mode says the same
        parse_config({"env": {**env, "mode": "free_for_all"}, "league": {"enabled": True}})
