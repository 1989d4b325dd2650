"""Human play in the terminal with injected input/output: bad keys are refused with a hint."""
from __future__ import annotations

import numpy as np
import pytest

from spade_rllib.play import C4_HINT, MAZE_HINT, Quit, main, parse_column, parse_maze_key, play_game
from spade_rllib.players.policy import load_policy
from spade_rllib.testing.tiny_checkpoints import save_tiny_checkpoint


@pytest.fixture(scope="module")
def ckpts(tmp_path_factory):
    root = tmp_path_factory.mktemp("play_ckpts")
    return {"maze": save_tiny_checkpoint(root / "maze", "MazeRace-v0"),
            "c4": save_tiny_checkpoint(root / "c4", "connect_four_v3", seed=3)}


def scripted(lines):
    lines = list(lines)
    prompts = []

    def read(prompt):
        prompts.append(prompt)
        if not lines:
            raise EOFError
        return lines.pop(0)

    return read, prompts


def test_parse_keys():
    assert [parse_maze_key(k) for k in "wasdt"] == [1, 3, 2, 4, 5]
    assert parse_maze_key(" ") == 0 and parse_maze_key("W") == 1
    for bad in ("x", "", "ww", "1", "up"):
        assert parse_maze_key(bad) is None
    with pytest.raises(Quit):
        parse_maze_key("q")
    mask = np.array([1, 1, 0, 1, 1, 1, 1])
    assert parse_column("3", mask) == 3 and parse_column(" 6 ", mask) == 6
    for bad in ("2", "7", "-1", "x", ""):
        assert parse_column(bad, mask) is None


def test_maze_refuses_bad_keys_then_plays_to_the_end(ckpts):
    policy = load_policy(ckpts["maze"])
    out = []
    read, prompts = scripted(["x", "up", ""] + [" "] * 500)
    result = play_game(policy, "MazeRace-v0", read, out.append, difficulty=2, seed=1)
    refusals = [line for line in out if line.startswith("invalid key")]
    assert len(refusals) == 3 and all(MAZE_HINT in line for line in refusals)
    assert result.winner in ("policy", "draw") and result.steps >= 1
    assert any("#" in line and "F" in line for line in out)  # the ASCII board was shown


def test_maze_quit(ckpts):
    read, _ = scripted(["d", "q"])
    out = []
    result = play_game(load_policy(ckpts["maze"]), "MazeRace-v0", read, out.append, seed=0)
    assert result.winner == "quit" and result.steps == 1


def test_connect_four_refuses_bad_columns(ckpts):
    policy = load_policy(ckpts["c4"])
    out = []
    # column 0 six times fills it; the seventh "0" must be refused
    read, _ = scripted(["9", "abc", "0", "0", "0", "0", "0", "0", "0", "1", "2", "3", "4", "5", "6"] * 3)
    result = play_game(policy, "connect_four_v3", read, out.append, seed=0)
    refusals = [line for line in out if line.startswith("invalid column")]
    assert {"invalid column '9'", "invalid column 'abc'"} <= {r.split(" (")[0] for r in refusals}
    assert all(C4_HINT in r for r in refusals)
    assert result.winner in ("human", "policy", "draw", "quit")


def test_cli_with_injected_io(ckpts):
    read, _ = scripted(["w", "q"])
    out = []
    assert main(["--checkpoint", str(ckpts["maze"]), "--difficulty", "1"], read=read, write=out.append) == 0
    assert out[-1] == "quit"
