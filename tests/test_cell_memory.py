"""The cell memory (`envs/cell_memory.py`) and CaptureTheFlag's `cell_memory` / `plan` options: nothing the agent
never saw is in the grid (checked cell by cell against the level over random walks), the grid starts empty each
episode, the planner's distances are breadth-first distances on what was seen, and a player that only follows
the plan features of its observation reaches the enemy base on every held-out map."""
from __future__ import annotations

import numpy as np
import pytest

from spade_rllib.curriculum.heldout_maps import load_heldout_levels
from spade_rllib.envs import CaptureTheFlag, Knobs
from spade_rllib.envs.cell_memory import (C_CARRIER, C_ENEMY_BASE, C_OPEN, C_OPPONENT, C_OWN_BASE, C_SELF, C_UNSEEN,
                                          C_VISITED, C_WALL, CHANNELS, PLAN_SIZE, UNREACHABLE, CellMemory,
                                          bfs_distances)
from spade_rllib.envs.ctf import VECTOR_SIZE

P0, P1 = "player_0", "player_1"
HELDOUT = "spade_rllib/levels/heldout_ctf"


def _plan_slice(env: CaptureTheFlag) -> slice:
    (w, _, c), _ = CaptureTheFlag.obs_layout(env.view_radius)
    start = w * w * c + VECTOR_SIZE
    return slice(start, start + PLAN_SIZE)


def _grid(env: CaptureTheFlag, obs: np.ndarray) -> np.ndarray:
    s = env.cell_memory
    return obs[-s * s * len(CHANNELS):].reshape(s, s, len(CHANNELS))


@pytest.mark.parametrize("family,size,seed", [("maze", 21, 0), ("rooms", 17, 1), ("open", 9, 2), ("maze", 13, 3)])
def test_grid_holds_exactly_what_was_seen(family, size, seed):
    env = CaptureTheFlag(knobs=Knobs(family=family, size=size, wall_density=0.2), cell_memory=21, plan=True)
    rng = np.random.default_rng(seed)
    rad = env.view_radius
    for episode in range(2):
        obs, _ = env.reset(seed=seed * 10 + episode)
        walls = np.asarray(env.level.walls, dtype=bool)
        h, w = walls.shape
        seen = {a: np.zeros((21, 21), dtype=bool) for a in env.possible_agents}
        stood = {a: np.zeros((21, 21), dtype=bool) for a in env.possible_agents}
        sightings = {a: {} for a in env.possible_agents}
        steps = 0
        while True:
            for a in env.possible_agents:
                r, c = env.positions[a]
                seen[a][max(0, r - rad):r + rad + 1, max(0, c - rad):c + rad + 1] = True
                stood[a][r, c] = True
                for o in env.possible_agents:
                    if env.team_of(o) != env.team_of(a) and max(abs(env.positions[o][0] - r),
                                                                abs(env.positions[o][1] - c)) <= rad:
                        sightings[a][o] = env.positions[o]
            for a in env.possible_agents:
                g = _grid(env, obs[a])
                truth = np.ones((21, 21), dtype=bool)  # outside the level reads as wall
                truth[:h, :w] = walls
                known = g[..., C_OPEN] + g[..., C_WALL]
                assert np.array_equal(known > 0.5, seen[a]), "a cell is known that no window showed, or the reverse"
                assert np.array_equal(g[..., C_WALL] > 0.5, seen[a] & truth)
                assert np.array_equal(g[..., C_OPEN] > 0.5, seen[a] & ~truth)
                assert np.array_equal(g[..., C_UNSEEN] > 0.5, ~seen[a])
                assert np.array_equal(g[..., C_VISITED] > 0.5, stood[a])
                assert np.argwhere(g[..., C_SELF] > 0.5).tolist() == [list(env.positions[a])]
                t = env.team_of(a)
                assert g[env.level.bases[t][0], env.level.bases[t][1], C_OWN_BASE] == 1.0
                assert g[env.level.bases[1 - t][0], env.level.bases[1 - t][1], C_ENEMY_BASE] == 1.0
                marked = {tuple(x) for x in np.argwhere(g[..., C_OPPONENT] > 0)}
                assert marked == set(sightings[a].values())  # only where an opponent was seen
            if not env.agents or steps > 120:
                break
            obs, *_ = env.step({a: int(rng.integers(0, 6)) for a in env.agents})
            steps += 1


def test_grid_starts_empty_each_episode():
    env = CaptureTheFlag(knobs=Knobs(family="maze", size=15), cell_memory=15)
    obs, _ = env.reset(seed=0)
    first = _grid(env, obs[P0]).copy()
    for _ in range(40):
        obs, *_ = env.step({P0: 4, P1: 3})
    assert _grid(env, obs[P0])[..., C_UNSEEN].sum() < first[..., C_UNSEEN].sum()
    obs, _ = env.reset(seed=0)
    assert np.array_equal(_grid(env, obs[P0]), first)


def test_carrier_sighting_only_while_the_flag_is_away():
    mem = CellMemory(9, 2)
    mem.reset((9, 9), own_base=(1, 1), enemy_base=(7, 7))
    window = np.zeros((5, 5))
    mem.see((3, 3), window, step=1, sightings={"b": (4, 4)}, flag_home=False, carrier="b")
    g = mem.grid()
    assert g[4, 4, C_CARRIER] == 1.0 and g[4, 4, C_OPPONENT] == 1.0
    assert mem.plan()[10:14].tolist() == [1.0, -1.0, 1.0, -1.0]  # down and right bring it closer to the carrier
    mem.see((3, 3), window, step=3, flag_home=True)
    g = mem.grid()
    assert g[..., C_CARRIER].sum() == 0.0 and g[4, 4, C_OPPONENT] == pytest.approx(0.95 ** 2)
    assert mem.plan()[10:15].tolist() == [0.0, 0.0, 0.0, 0.0, 1.0]  # no carrier to chase


def test_bfs_compiled_matches_python_and_level_distances():
    rng = np.random.default_rng(0)
    for _ in range(20):
        passable = rng.random((17, 17)) > 0.35
        a, b = np.zeros((17, 17), np.int32), np.zeros((17, 17), np.int32)
        bfs_distances(passable, (8, 8), a)
        bfs_distances(passable, (8, 8), b, compiled=False)
        assert np.array_equal(a, b)
    env = CaptureTheFlag(knobs=Knobs(family="maze", size=13), plan=True)
    env.reset(seed=4)
    walls = np.asarray(env.level.walls, dtype=bool)
    d = np.zeros(walls.shape, np.int32)
    bfs_distances(~walls, env.level.bases[0], d)
    truth = env.level.distance_to_base(0)
    open_cells = ~walls
    assert np.array_equal(d[open_cells], truth[open_cells])
    assert (d[walls] == UNREACHABLE).all()


def test_plan_features_reach_the_enemy_base_on_every_heldout_map():
    """A player that reads only the plan features of its own observation (the first four: the change of distance
    to the enemy base for up, down, left, right) and takes the best move reaches the enemy base on every held-out
    map, against a team that never moves: the memory holds enough to plan through mazes it has not seen."""
    for name, level in load_heldout_levels([HELDOUT]).items():
        env = CaptureTheFlag(level=level, plan=True)
        obs, _ = env.reset(seed=0)
        sl = _plan_slice(env)
        picked = False
        for _ in range(env.max_steps):
            toward = obs[P0][sl][:4]
            act = 1 + int(np.argmin(toward))
            obs, _, term, trunc, _ = env.step({P0: act, P1: 0})
            if env.carrier[1] == P0:
                picked = True
                break
            assert env.agents, f"{name}: the episode ended before the plan led to the enemy flag"
        assert picked, f"{name}: following the plan did not reach the enemy base in {env.max_steps} steps"


def test_bad_options_are_one_line_errors():
    with pytest.raises(ValueError, match="plan must be a bool"):
        CaptureTheFlag(difficulty=1.0, plan=1)
    with pytest.raises(ValueError, match="cell_memory must be 0"):
        CaptureTheFlag(difficulty=1.0, cell_memory=3)
    with pytest.raises(ValueError, match="two memory maps"):
        CaptureTheFlag(difficulty=1.0, cell_memory=21, seen_map=7)
    env = CaptureTheFlag(knobs=Knobs(family="maze", size=21), cell_memory=15)
    with pytest.raises(ValueError, match="holds levels up to 15x15"):
        env.reset(seed=0)


def test_observation_layout():
    env = CaptureTheFlag(difficulty=3.0, plan=True, cell_memory=21)
    obs, _ = env.reset(seed=0)
    (w, _, c), v = CaptureTheFlag.obs_layout(env.view_radius)
    assert obs[P0].shape == (w * w * c + v + PLAN_SIZE + 21 * 21 * len(CHANNELS),)
    assert env.observation_space(P0).contains(obs[P0])
    assert CaptureTheFlag.map_layout(cell_memory=21) == (21, 21, len(CHANNELS))
    plain = CaptureTheFlag(difficulty=3.0)
    assert plain.observation_space(P0).shape == (w * w * c + v,)  # off by default: old checkpoints keep their layout


# ------------------------------------------------------------------------------------------ the learned planner
VIN = {"map_shape": [21, 21, len(CHANNELS)], "planner": "vin", "planner_iterations": 0, "planner_channels": 4}
MEMORY_KWARGS = {"cell_memory": 21, "plan": True}


def test_value_iteration_reads_distances_at_the_agents_cell():
    """With goal and passability maps set by hand (a goal cell, walls impassable), the learned planner's read-out
    is the fixed planner's: the change of distance of each move and the distance / 64."""
    import torch

    from spade_rllib.rllib.module import _ValueIteration

    vi = _ValueIteration(len(CHANNELS), 4, iterations=30, self_channel=C_SELF)
    walls = np.zeros((9, 9), dtype=bool)
    walls[4, 1:8] = True  # a wall between the agent (row 6) and the goal (row 2), open at both ends
    grid = np.zeros((1, len(CHANNELS), 9, 9), dtype=np.float32)
    grid[0, C_SELF, 6, 4] = 1.0
    goal = np.full((9, 9), -20.0, dtype=np.float32)
    goal[2, 4] = 20.0
    passable = np.where(walls, -20.0, 20.0).astype(np.float32)
    class Fixed(torch.nn.Module):  # the two conv layers replaced by the wanted maps (pre-sigmoid)
        def forward(self, _x):
            return torch.from_numpy(np.stack([goal, goal, passable, passable])[None])

    vi.maps = Fixed()
    with torch.no_grad():
        out = vi(torch.from_numpy(grid)).numpy()[0]
    d = np.zeros((9, 9), np.int32)
    bfs_distances(~walls, (2, 4), d)
    assert out[4] == pytest.approx(d[6, 4] / 64.0, abs=1e-3)
    toward = out[:4]  # up is not closer here: the wall; left and right lead round it
    assert toward.tolist() == pytest.approx([d[5, 4] - d[6, 4], d[7, 4] - d[6, 4], d[6, 3] - d[6, 4],
                                             d[6, 5] - d[6, 4]], abs=1e-3)


def test_onnx_and_policy_of_a_planner_run_act_on_its_envs_observations(tmp_path, capsys):
    """A CaptureTheFlag run with the cell memory, the plan and the learned planner exports to ONNX with torch's
    logits on real observations (its exact planner as a Loop, at opset 18 with a note), and `load_policy` plays it
    (evaluation and `play` act through it)."""
    import onnx

    from spade_rllib.export import export_onnx, onnx_logits, torch_logits
    from spade_rllib.players.policy import load_policy
    from spade_rllib.testing.tiny_checkpoints import save_tiny_checkpoint

    policy = load_policy(save_tiny_checkpoint(tmp_path / "ctf", "CaptureTheFlag-v0", seed=4, env_kwargs=MEMORY_KWARGS,
                                              model=dict(VIN)))
    env = CaptureTheFlag(knobs=Knobs(family="maze", size=19), seed=0, **MEMORY_KWARGS)
    obs, _ = env.reset(seed=0)
    for _ in range(15):
        obs, *_ = env.step({a: 4 for a in env.agents})
    x = np.stack([obs[a] for a in env.possible_agents]).astype(np.float32)
    assert policy.feature_size == x.shape[1]
    path = export_onnx(policy, tmp_path / "ctf.onnx")
    assert np.max(np.abs(onnx_logits(path, x) - torch_logits(policy, x))) <= 1e-5
    graph = onnx.load(str(path))
    assert {o.version for o in graph.opset_import if o.domain in ("", "ai.onnx")} == {18}
    assert any(node.op_type == "Loop" for node in graph.graph.node)
    assert "opset 17 -> 18" in capsys.readouterr().err
    assert all(0 <= policy.act(obs[a]) < 6 for a in env.possible_agents)


def test_planner_keys_are_checked_before_ray():
    from spade_rllib.config.run_config import ConfigError, parse_config

    with pytest.raises(ConfigError, match=r"agent.model.planner = 'vin': plans on a cell memory, .*cell_memory"):
        parse_config({"env": {"id": "CaptureTheFlag-v0"}, "agent": {"model": {"planner": "vin"}}})
    with pytest.raises(ConfigError, match=r"map_channels = \[4\]: the planner .*pick one"):
        parse_config({"env": {"id": "CaptureTheFlag-v0", "kwargs": {"cell_memory": 21}},
                      "agent": {"model": {"planner": "vin", "map_channels": [4]}}})
    with pytest.raises(ConfigError, match="planner"):
        parse_config({"env": {"id": "CaptureTheFlag-v0"}, "agent": {"model": {"planner": "gppn"}}})


@pytest.mark.ray
def test_league_with_the_cell_memory_plan_and_learned_planner(ray_session):
    """env.kwargs cell_memory + plan and agent.model.planner through the whole pipeline: runners act, the learner
    trains, snapshots of main play in the league, main's weights carry the planner."""
    from spade_rllib.config.run_config import parse_config
    from spade_rllib.rllib.algo_config import build_algo_config

    model = {"hidden": [16], "planner": "vin", "planner_channels": 4}  # the exact planner, the default
    cfg = parse_config({"experiment": {"name": "ctf_planner", "seed": 2},
                        "env": {"id": "CaptureTheFlag-v0", "difficulty": 1.0, "kwargs": MEMORY_KWARGS},
                        "agent": {"train_batch_size": 256, "minibatch_size": 128, "epochs": 1, "model": model},
                        "training": {"num_envs_per_runner": 4, "num_env_runners": 0}, "evaluation": {"interval": 0},
                        "league": {"enabled": True, "every_n_iterations": 1, "win_rate_threshold": None,
                                   "num_opponent_slots": 2}})
    algo = build_algo_config(cfg).build_algo()
    try:
        results = [algo.train() for _ in range(3)]
        assert any("planner" in k for k in algo.main_weights())
        (comp,) = [c for c in algo.components if c.name == "league"]
        assert len(comp.league.snapshots()) == 3 and results[-1]["league"]["size"] == 4.0
        assert sum(comp.league.games(m) for m in comp.league.snapshots()) > 0
    finally:
        algo.stop()


def test_plan_follower_bench_ends_with_json(tmp_path):
    """`bench/ablations/plan_follower.py`: the scripted player that reads only the plan of its own observation, against
    the racing bots per held-out map. On `maze_21` it reaches the rusher's flag before the rusher is home (a
    stalemate draw, never a loss): the line main's learned policy is compared with in docs/results.md."""
    import json
    import os
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(root), os.environ.get("PYTHONPATH")]))}
    proc = subprocess.run([sys.executable, "bench/ablations/plan_follower.py", "--games", "4", "--maps",
                           "open_field,maze_21", "--bots", "rusher,hybrid"],
                          cwd=root, env=env, capture_output=True, text=True, timeout=120, check=True)
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["games"] == 4 and set(out["by_map"]) == {"open_field", "maze_21"}
    assert set(out["by_size"]) == {"up to 11x11", "17-21"}
    assert all(sum(o.values()) == 8 for o in out["outcomes"].values())
    assert out["by_map"]["maze_21"]["rusher"] == 0.5
    bad = subprocess.run([sys.executable, "bench/ablations/plan_follower.py", "--bots", "rusherr"],
                         cwd=root, env=env, capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and "did you mean 'rusher'" in bad.stderr

    from bench.ablations import plan_follower as pf
    from spade_rllib.testing.tiny_checkpoints import save_tiny_checkpoint

    planned = save_tiny_checkpoint(tmp_path / "plan", "CaptureTheFlag-v0", seed=1, env_kwargs={"plan": True})
    out = pf.main(["--games", "2", "--maps", "open_field", "--bots", "rusher", "--checkpoint", str(planned),
                   "--stochastic"])
    main = out["main"]
    assert main["stochastic"] and sum(main["outcomes"]["rusher"].values()) == 2
    habits = main["habits"]["open_field"]
    assert habits["idle_tags"] >= 0 and habits["noops"] >= 0 and 0.0 <= habits["on_plan"] <= 1.0
    unplanned = save_tiny_checkpoint(tmp_path / "none", "CaptureTheFlag-v0", seed=1, env_kwargs={"trail": True})
    with pytest.raises(SystemExit) as e:
        pf.main(["--games", "1", "--checkpoint", str(unplanned)])
    assert e.value.code == 2
