"""bench/ablations/compute_curve.py: its arguments are refused in one line before any run, a stage's overrides
name the recipe and the budget, units already written are reused (nothing trains), and the curve is drawn from
the units alone."""
from __future__ import annotations

import json
import sys

import pytest
import yaml

from bench.ablations import compute_curve as cc


def _unit(out, recipe, seed, millions, score):
    ev = {f"final_heldout_size/{c}/bot:{b}/score": score for c in cc.SIZE_CLASSES for b in cc.BOTS}
    ev["final_heldout_all/still/win_rate"] = score
    path = out / f"{recipe}_seed{seed}" / f"{millions}M.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"recipe": recipe, "seed": seed, "milestone": millions * 1_000_000,
                                "env_steps": millions * 1_000_000 + 4096, "evaluation": ev}))


@pytest.mark.parametrize("argv,message", [(["--recipe", "plan", "--milestones", "10,5"], "rising"),
                                          (["--recipe", "plan", "--seed", "-1"], "--seed -1"),
                                          (["--recipe", "plan", "--milestones", "a"], "comma-separated integers")])
def test_bad_arguments_are_one_line(capsys, argv, message):
    with pytest.raises(SystemExit) as e:
        cc.parse_args(argv)
    assert e.value.code == 2 and message in capsys.readouterr().err


def test_stage_overrides_and_cached_units(tmp_path, monkeypatch, capsys):
    args = cc.parse_args(["--recipe", "plan", "--milestones", "5,10", "--out-dir", str(tmp_path / "units"),
                          "--run-root", str(tmp_path / "runs")])
    sets = cc.unit_overrides(args, 5_000_000)
    assert "env.kwargs={draw_reward: -0.1, plan: true}" in sets
    assert "training.stop={env_steps: 5000000, time_s: 360000}" in sets
    assert "evaluation.final_heldout_max_size=0" in sets
    _unit(tmp_path / "units", "plan", 0, 5, 0.25)
    _unit(tmp_path / "units", "plan", 0, 10, 0.5)
    monkeypatch.setattr(cc, "run_stage", lambda *a: pytest.fail("a cached unit trained again"))
    summary = cc.main(["--recipe", "plan", "--milestones", "5,10", "--out-dir", str(tmp_path / "units"),
                       "--run-root", str(tmp_path / "runs")])
    assert [u["large_rusher"] for u in summary["units"]] == [0.25, 0.5] and summary["missing"] == []
    assert json.loads(capsys.readouterr().out.strip().splitlines()[-1])["bench"] == "compute_curve"


def test_plot_from_units(tmp_path):
    for recipe, seed, m, score in (("plan", 0, 5, 0.3), ("plan", 1, 5, 0.5), ("plan", 0, 10, 0.6), ("lstm", 0, 5, 0.1)):
        _unit(tmp_path, recipe, seed, m, score)
    points = cc.curve_points(tmp_path)
    assert points["plan"]["large/rusher"][0][1] == pytest.approx(0.4)  # two seeds averaged
    assert points["plan"]["large/rusher"][0][2] == [0.3, 0.5]
    assert points["plan"]["navigation"][0][2] == [0.3, 0.5]
    assert cc.navigation({"final_heldout_all/still/win_rate": 0.6, "final_heldout_all/still/draw_rate": 0.3}) == \
        pytest.approx(0.75)  # a score like the summary's: a draw counts half
    png = cc.plot(tmp_path, tmp_path / "curve.png")
    assert png.stat().st_size > 5000
    assert sys.modules["matplotlib"].get_backend().lower() == "agg"


def test_each_recipe_resolves_to_its_own_model_and_observation(tmp_path):
    """`lstm` is the demo without the plan, whatever the shipped quickstart.yaml turns on; `plan` and `vin` have it."""
    from spade_rllib.config.run_config import load_config

    seen = {}
    for recipe in cc.RECIPES:
        args = cc.parse_args(["--recipe", recipe, "--out-dir", str(tmp_path / "u"), "--run-root", str(tmp_path / "r")])
        cfg = load_config(str(cc.ROOT / cc.CONFIG), cc.unit_overrides(args, 5_000_000))
        seen[recipe] = (bool(cfg.env.kwargs.get("plan")), cfg.env.kwargs.get("cell_memory", 0), cfg.agent.model.planner)
    assert seen["lstm"] == (False, 0, "none")
    assert seen["plan"] == (True, 0, "none")
    assert seen["vin"] == (False, 21, "vin")  # the learned planner alone: no fixed plan beside it


def test_carry_keeps_the_newest_whole_checkpoint_and_a_rerun_resumes_from_it(tmp_path, monkeypatch):
    """`--carry TRIAL` copies the newest whole checkpoint and config.yaml into the committed carry folder, replacing
    the old one; a stage with no run under --run-root resumes from that folder."""
    from spade_rllib.testing.tiny_checkpoints import save_tiny_checkpoint

    trial = tmp_path / "runs" / "plan_seed0" / "plan_seed0_abc"
    for name in ("checkpoint_000001", "checkpoint_000002"):
        save_tiny_checkpoint(trial, "MazeRace-v0", checkpoint_name=name, env_kwargs={})
    (trial / "config.yaml").write_text("env: {id: MazeRace-v0}\nexperiment: {storage_path: /abs/runs}\n"
                                       "evaluation: {final_heldout_levels: [/elsewhere/checkout/spade_rllib/levels]}\n")
    (trial / "checkpoint_000003").mkdir()  # half written: skipped
    out = tmp_path / "units"
    base = ["--recipe", "plan", "--out-dir", str(out), "--run-root", str(tmp_path / "elsewhere")]
    summary = cc.main([*base, "--carry", str(trial)])
    carry = out / "plan_seed0" / "carry"
    assert summary["carried"] == str(carry / "checkpoint_000002")
    assert sorted(p.name for p in carry.iterdir()) == ["checkpoint_000002", "config.yaml"]
    carried = yaml.safe_load((carry / "config.yaml").read_text())  # no machine path is committed
    assert carried["experiment"]["storage_path"] == "runs/compute_curve"
    assert carried["evaluation"]["final_heldout_levels"] == ["spade_rllib/levels"]  # found from the repo's root
    save_tiny_checkpoint(trial, "MazeRace-v0", checkpoint_name="checkpoint_000004", env_kwargs={})
    cc.main([*base, "--carry", str(trial)])
    assert sorted(p.name for p in carry.iterdir()) == ["checkpoint_000004", "config.yaml"]
    with pytest.raises(SystemExit):
        cc.main([*base, "--carry", str(tmp_path / "nothing")])

    commands = []

    def fake_run(cmd, **_kw):  # stands in for the training subprocess: records the command, leaves a finished run
        commands.append(cmd)
        done = tmp_path / "elsewhere" / "plan_seed0" / "plan_seed0_new"
        save_tiny_checkpoint(done, "MazeRace-v0", checkpoint_name="checkpoint_000005", env_kwargs={})
        (done / "config.yaml").write_text("env: {id: MazeRace-v0}\n")
        (done / "final_evaluation.json").write_text("{}")

    monkeypatch.setattr(cc.subprocess, "run", fake_run)
    cc.run_stage(cc.parse_args(base), 5_000_000)
    assert commands[0][commands[0].index("--resume") + 1] == str(carry)
    assert sorted(p.name for p in carry.iterdir()) == ["checkpoint_000005", "config.yaml"]
