"""Kickstarting (`agent.teacher`): config errors, the runner's teacher labels (packed and as RLlib episodes), per-seat
bot instances, and a short run whose policy moves toward the teacher."""
from __future__ import annotations

import numpy as np
import pytest

from spade_rllib.config.run_config import ConfigError, parse_config
from spade_rllib.games import CTF_ID
from spade_rllib.rllib.packed import TEACHER_ACTIONS, PackedEpisodes


def _raw(**agent) -> dict:
    return {"experiment": {"name": "teach_t", "seed": 3},
            "env": {"id": CTF_ID, "difficulty": 1.0},
            "agent": {"train_batch_size": 256, "minibatch_size": 128, "epochs": 1, "model": {"hidden": [16]}, **agent},
            "training": {"num_envs_per_runner": 2, "num_env_runners": 0, "stop": {"env_steps": 1000}},
            "evaluation": {"interval": 0}}


@pytest.mark.parametrize("agent, words", [
    ({"teacher": "raidr"}, ["agent.teacher = 'raidr'", "did you mean 'raider'"]),
    ({"teacher_schedule": [[0, 1.0]]}, ["agent.teacher_schedule is set but agent.teacher is null"]),
    ({"teacher": "raider", "teacher_schedule": [[0, float("nan")]]}, ["agent.teacher_schedule[0]", "finite"]),
    ({"teacher": "raider", "teacher_schedule": [[10, 1.0]]}, ["must start at 0"]),
    ({"teacher": "raider", "teacher_coeff": -1.0}, ["agent.teacher_coeff"]),
])
def test_bad_teacher_settings_are_one_line_config_errors(agent, words):
    with pytest.raises(ConfigError) as e:
        parse_config(_raw(**agent))
    assert "\n" not in str(e.value) and all(w in str(e.value) for w in words), str(e.value)


def test_teacher_needs_bots_and_the_lean_learner():
    raw = _raw(teacher="raider")
    raw["env"] = {"id": "CartPole-v1"}
    with pytest.raises(ConfigError, match="CartPole-v1 has no scripted bots"):
        parse_config(raw)
    raw = _raw(teacher="raider")
    raw["training"]["lean_learner"] = False
    with pytest.raises(ConfigError, match="needs training.lean_learner = true"):
        parse_config(raw)
    assert parse_config(_raw(teacher="bot:raider")).agent.teacher == "raider"


class _StepBot:
    """A teacher whose label is the env's step count (mod 6) when asked: shows when and for whom it was asked."""

    def act(self, env, agent):
        return env.unwrapped.step_count % 6


def _runner(monkeypatch, packed: bool, **agent):
    import spade_rllib.games as games
    from spade_rllib.rllib.algo_config import build_algo_config
    from spade_rllib.rllib.runner import SpadeEnvRunner

    real = games.make_bot
    monkeypatch.setattr(games, "make_bot", lambda name, seed=None, *, env_id: _StepBot() if name == "raider" else real(name, seed, env_id=env_id))
    config = build_algo_config(parse_config(_raw(teacher="raider", **agent)))
    config.env_config["spade"]["packed"] = packed
    return SpadeEnvRunner(config=config, worker_index=0, num_workers=0)


def _check_labels(labels: list, first_chunk: bool) -> None:
    """One chunk's labels: asked once per learner step, in the state the learner acted in (the episode's first
    step is step 0), so consecutive labels rise by one (mod 6)."""
    labels = np.asarray(labels)
    assert len(labels) > 1
    assert np.all((np.diff(labels) % 6) == 1), labels
    if first_chunk:
        assert labels[0] == 0


def test_packed_chunks_carry_the_teachers_label_of_every_step(monkeypatch):
    runner = _runner(monkeypatch, packed=True)
    try:
        (pack,) = runner.sample(num_timesteps=120)
    finally:
        runner.stop()
    assert pack.teacher.shape == pack.actions.shape
    starts = np.concatenate([[0], np.cumsum(pack.lengths)[:-1]])
    for c, (s, n) in enumerate(zip(starts, pack.lengths)):
        if n > 1:
            _check_labels(pack.teacher[s:s + n], first_chunk=c < 4)  # the first chunks start at step 0


def test_rllib_episodes_carry_the_labels_and_pack_the_same(monkeypatch):
    runner = _runner(monkeypatch, packed=False)
    try:
        episodes = runner.sample(num_timesteps=60)
    finally:
        runner.stop()
    for e in episodes:
        labels = list(e.get_extra_model_outputs(TEACHER_ACTIONS))
        assert len(labels) == len(e)
        if len(e) > 1:
            _check_labels(labels, first_chunk=False)
    pack = PackedEpisodes.from_episodes(episodes)
    assert pack.teacher.tolist() == [x for e in episodes for x in e.get_extra_model_outputs(TEACHER_ACTIONS)]


def test_no_teacher_no_labels():
    from spade_rllib.rllib.algo_config import build_algo_config
    from spade_rllib.rllib.runner import SpadeEnvRunner

    runner = SpadeEnvRunner(config=build_algo_config(parse_config(_raw())), worker_index=0, num_workers=0)
    try:
        (pack,) = runner.sample(num_timesteps=40)
    finally:
        runner.stop()
    assert pack.teacher.shape == (0,)


def test_packs_with_and_without_labels_do_not_mix():
    obs = [np.zeros(3, np.float32)] * 3
    chunk = (obs, [1, 2], [0.0, 1.0], [0.0, 0.0], [np.zeros(6, np.float32)] * 2, True, "", None)
    with pytest.raises(ValueError, match="some chunks only"):
        PackedEpisodes.build([chunk + ([4, 5],), chunk + (None,)], 3, 6)
    a, b = PackedEpisodes.build([chunk + ([4, 5],)], 3, 6), PackedEpisodes.build([chunk], 3, 6)
    assert a.teacher.tolist() == [4, 5]
    with pytest.raises(ValueError, match="with and without teacher"):
        PackedEpisodes.concat([a, b])


def test_each_seat_has_its_own_bot():
    """Bots keep state over their episode (the hybrid's guard spell): lanes must not share one instance."""
    from spade_rllib.rllib.algo_config import build_algo_config
    from spade_rllib.rllib.runner import SpadeEnvRunner

    raw = _raw()
    raw["self_play"] = {"opponent_mix": {"bot:hybrid": 1.0}}
    raw["training"]["num_envs_per_runner"] = 3
    runner = SpadeEnvRunner(config=build_algo_config(parse_config(raw)), worker_index=0, num_workers=0)
    try:
        runner.sample(num_timesteps=30)
        seats = {(lane, agent) for (name, training, lane, agent, teacher) in runner._bots}
        assert len(seats) == 3 and len({id(b) for b in runner._bots.values()}) == 3
        training = dict(runner._bots)
        runner.evaluate_main({"opponents": ["bot:hybrid"], "games": 2})  # evaluation lanes get their own bots
        assert all(runner._bots[k] is b for k, b in training.items())
        assert len(runner._bots) == 5 and all(not k[1] for k in set(runner._bots) - set(training))
    finally:
        runner.stop()


@pytest.mark.ray
def test_a_kickstarted_policy_moves_toward_its_teacher(ray_session):
    """A few updates with a heavy teacher weight: the policy's agreement with `raider` rises well above chance
    (1/6) and the logged weight follows the schedule."""
    from spade_rllib.rllib.algo_config import build_algo_config

    raw = _raw(teacher="raider", teacher_schedule=[[0, 5.0], [2048, 2.5]], lr=1e-2, epochs=8, entropy=0.0,
               grad_clip=None)
    algo = build_algo_config(parse_config(raw)).build_algo()
    try:
        results = [algo.train() for _ in range(8)]
    finally:
        algo.stop()
    learner = [r["learners"]["main"] for r in results]
    loss = [x["teacher_loss"] for x in learner]
    agree = [x["teacher_agreement"] for x in learner]
    assert np.mean(loss[-2:]) < np.mean(loss[:2]) - 0.2, loss
    assert np.mean(agree[-2:]) > max(0.6, np.mean(agree[:2]) + 0.08), agree
    assert learner[0]["curr_teacher_coeff"] == pytest.approx(5.0 - 2.5 * 256 / 2048, abs=1e-6)


def test_recurrent_batches_carry_the_labels_on_their_step_rows(monkeypatch):
    """The LSTM's (B, max_seq_len) train batch: the teacher column holds each step row's label where the loss
    mask is on, in the same order as the flat pack."""
    from spade_rllib.rllib.packed import SpadeGAEConnector

    runner = _runner(monkeypatch, packed=True, model={"hidden": [16], "memory": "lstm", "lstm_cell_size": 8,
                                                        "max_seq_len": 5})
    try:
        (pack,) = runner.sample(num_timesteps=80)
        batch = SpadeGAEConnector(gamma=0.9, lambda_=0.8)._module_batch(runner.module["main"], pack)
    finally:
        runner.stop()
    mask = batch["loss_mask"].numpy().astype(bool)
    teacher = batch[TEACHER_ACTIONS].numpy()
    assert teacher.shape == mask.shape and teacher[mask].tolist() == pack.teacher.tolist()
