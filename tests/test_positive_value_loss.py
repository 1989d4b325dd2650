"""PLR's positive value loss computed where the advantages are (the GAE connector), per level, and
carried to the driver's strategy. Pure numpy for the formula; the connector runs on a tiny module."""
from __future__ import annotations

import numpy as np
import pytest

from spade_rllib.curriculum import LevelSpec, positive_value_loss
from spade_rllib.core.outcome import EpisodeOutcome
from spade_rllib.rllib.curriculum_component import CurriculumComponent, with_positive_value_loss
from spade_rllib.rllib.components import DriverContext
from spade_rllib.rllib.packed import PackedEpisodes, gae, level_positive_advantages
from spade_rllib.curriculum.curriculum_config import CurriculumConfig


def chunk(rewards, level, terminated=True):
    n = len(rewards)
    obs = [np.full(2, float(t), np.float32) for t in range(n + 1)]
    return (obs, [0] * n, list(rewards), [0.0] * n, [np.zeros(3, np.float32)] * n, terminated, level)


def test_per_level_sums_equal_the_reference_formula():
    pack = PackedEpisodes.build([chunk([0.0, 1.0], "L1"), chunk([0.0, 0.0, -1.0], "L2"), chunk([1.0], "L1"),
                                 chunk([0.5], "")], obs_size=2, num_actions=3)
    # values per row (steps and one bootstrap row per chunk): pick them by hand
    values = np.array([0.2, 0.5, 9.0,   0.1, 0.0, 0.3, 9.0,   0.25, 9.0,   0.0, 9.0], np.float32)
    adv, _ = gae(values, pack, gamma=0.9, lambda_=0.8)
    sums = level_positive_advantages(adv, pack)
    ref = {  # each chunk through the reference per-episode formula (terminated: no bootstrap)
        "L1": positive_value_loss([0.0, 1.0], [0.2, 0.5], 0.9, 0.8) * 2 + positive_value_loss([1.0], [0.25], 0.9, 0.8),
        "L2": positive_value_loss([0.0, 0.0, -1.0], [0.1, 0.0, 0.3], 0.9, 0.8) * 3,
    }
    assert set(sums) == {"L1", "L2"}  # the untagged chunk is nobody's level
    assert sums["L1"][1] == 3 and sums["L2"][1] == 3
    assert sums["L1"][0] == pytest.approx(ref["L1"], rel=1e-5) and sums["L2"][0] == pytest.approx(ref["L2"], rel=1e-5)


def test_concat_keeps_level_tags():
    a = PackedEpisodes.build([chunk([1.0], "L1")], 2, 3)
    b = PackedEpisodes.build([chunk([1.0, 0.0], "a-much-longer-level-id")], 2, 3)
    assert PackedEpisodes.concat([a, b]).levels.tolist() == ["L1", "a-much-longer-level-id"]


def test_component_attaches_the_levels_mean_and_plr_scores_with_it():
    x, y = (LevelSpec.generated({"family": "open", "size": 9}, seed=i) for i in range(2))
    outcomes = [EpisodeOutcome(winner="A", reason="flag", level={"level_id": s.level_id}, level_spec=s.to_dict())
                for s in (x, y)]
    sums = {x.level_id: (0.6, 4), y.level_id: (0.0, 2)}
    got = with_positive_value_loss(outcomes, sums)
    assert [o.positive_value_loss for o in got] == [0.15, 0.0]
    comp = CurriculumComponent(CurriculumConfig.from_dict({"strategy": "plr", "plr": {"score": "positive_value_loss"}}), "MazeRace-v0")
    ctx = DriverContext(iteration=1, env_steps_lifetime=0, main_weights=dict, num_runners=0, level_value_loss=sums)
    comp.update(outcomes, ctx)
    assert [e.score for e in comp.strategy.entries] == [0.15, 0.0] and comp.strategy.missing_values == 0


def test_connector_accumulates_main_only_and_pops():
    torch = pytest.importorskip("torch")
    from spade_rllib.rllib.packed import SpadeGAEConnector

    class Module(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.w = torch.nn.Parameter(torch.zeros(1))

        def compute_values(self, batch):
            return torch.zeros(batch["obs"].shape[0])

    conn = SpadeGAEConnector(gamma=1.0, lambda_=1.0)
    main = PackedEpisodes.build([chunk([1.0, 0.0], "L1")], 2, 3)
    other = PackedEpisodes.build([chunk([1.0], "L1")], 2, 3, module_id="main_exploiter_0")
    module = {"main": Module(), "main_exploiter_0": Module()}

    class Modules(dict):
        pass

    conn(rl_module=Modules(module), batch={}, episodes=[main, other])
    # main's chunk only: V = 0, gamma = lam = 1, rewards [1, 0] -> GAE [1, 0]: sum 1 over 2 steps
    assert conn.pop_level_value_loss() == {"L1": (1.0, 2)}
    assert conn.pop_level_value_loss() == {}
