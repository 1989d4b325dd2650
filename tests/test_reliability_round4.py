"""Reliability, round four: nothing half-written is trusted, nothing is counted twice, nothing that cannot finish is
started (docs/reliability.md "Round four"). No Ray cluster in this file.

a. one completeness rule for checkpoints, read from the checkpoint's own metadata (what RLlib's restore reads);
b. runs read together are distinct runs (one seed per trial, a continuation joined to its original);
c. bounds before work: the game-size cap of exact exploitability, a teacher's measured cost per step;
d. every bench path through the one shared check, before Ray;
e. `teacher_coeff` / `teacher_max_ms` without a teacher;
f. an exported league folder belongs to one run;
g. damaged run files in `report`: file and line named, exit 2, the rest rendered.
"""
from __future__ import annotations

import argparse
import itertools
import json
import pickle
import shutil
import sys
from pathlib import Path

import numpy as np
import pytest

from spade_rllib.config.run_config import ConfigError, load_config

ROOT = Path(__file__).resolve().parents[1]
OLD_CKPT = ROOT / "tests" / "fixtures" / "checkpoint_before_issue12" / "checkpoint_000000"
CONNECT_FOUR = str(ROOT / "tune_configs" / "connect_four.yaml")
QUICKSTART = str(ROOT / "tune_configs" / "quickstart.yaml")
KUHN = str(ROOT / "tune_configs" / "kuhn_league.yaml")
CARTPOLE = str(ROOT / "tune_configs" / "cartpole.yaml")
LEARNER_STATE = "learner_group/learner/state.pkl"


# ------------------------------------------------------------------------------------------------
# a. checkpoints: what the restore reads, from the checkpoint's own metadata
# ------------------------------------------------------------------------------------------------

def _trial(tmp_path: Path, *lose: str) -> tuple[Path, Path, Path]:
    """A trial with a whole checkpoint_000000 and a checkpoint_000001 that lost `lose` (relative paths)."""
    trial = tmp_path / "trial"
    old, new = trial / "checkpoint_000000", trial / "checkpoint_000001"
    shutil.copytree(OLD_CKPT, old)
    shutil.copytree(OLD_CKPT, new)
    for rel in lose:
        (new / rel).unlink()
    return trial, old, new


def test_the_rule_is_read_from_the_checkpoint_not_a_hand_list():
    from spade_rllib.artifacts.checkpoint_guard import restore_reads
    from spade_rllib.artifacts.checkpoint_layout import checkpoint_problem

    reads, problem = restore_reads(OLD_CKPT, "algorithm_state")
    assert problem is None and checkpoint_problem(OLD_CKPT) is None
    names = {str(p.relative_to(OLD_CKPT)) for p in reads}
    # every component's state file and constructor file, as each component's metadata names them
    assert {"algorithm_state.pkl", "class_and_ctor_args.pkl", "env_runner/state.pkl", "learner_group/state.pkl",
            LEARNER_STATE, "learner_group/learner/rl_module/module_state.pkl",
            "learner_group/learner/rl_module/main/module_state.pkl",
            "learner_group/learner/rl_module/main/class_and_ctor_args.pkl"} <= names


@pytest.mark.parametrize("lose, named", [
    (LEARNER_STATE, LEARNER_STATE),
    ("env_runner/state.pkl", "env_runner/state.pkl"),
    ("learner_group/state.pkl", "learner_group/state.pkl"),
    ("learner_group/learner/rl_module/main/module_state.pkl", "rl_module/main/module_state.pkl"),
    ("class_and_ctor_args.pkl", "class_and_ctor_args.pkl"),
    ("algorithm_state.pkl", "algorithm_state.pkl"),
    ("env_runner/metadata.json", "env_runner/metadata.json"),
    ("rllib_checkpoint.json", "rllib_checkpoint.json"),
])
def test_a_checkpoint_that_lost_any_file_the_restore_reads_is_not_whole(tmp_path, lose, named):
    from spade_rllib.artifacts.checkpoint_layout import checkpoint_problem

    _, _, new = _trial(tmp_path, lose)
    problem = checkpoint_problem(new)
    assert problem is not None and named in problem and "\n" not in problem, problem


def test_a_damaged_or_unreadable_file_is_named(tmp_path):
    from spade_rllib.artifacts.checkpoint_layout import checkpoint_problem

    _, _, new = _trial(tmp_path)
    (new / LEARNER_STATE).write_bytes(b"\x80\x04garbage")
    assert LEARNER_STATE in checkpoint_problem(new)
    (new / LEARNER_STATE).unlink()
    (new / LEARNER_STATE).mkdir()  # a directory where the file was: cannot be read as one
    assert f"{LEARNER_STATE} is missing" in checkpoint_problem(new)
    (new / LEARNER_STATE).rmdir()
    (new / LEARNER_STATE).write_bytes(b"")
    assert f"{LEARNER_STATE}: empty file" in checkpoint_problem(new)


def test_resume_falls_back_to_the_newest_whole_checkpoint_with_one_line(tmp_path, capsys):
    from spade_rllib.train import find_checkpoint

    trial, old, new = _trial(tmp_path, LEARNER_STATE)
    assert find_checkpoint(str(trial)) == str(old)
    notes = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert len(notes) == 1 and notes[0].startswith("note: skipping incomplete checkpoint") and LEARNER_STATE in notes[0]
    with pytest.raises(ConfigError, match=f"not a usable checkpoint: {LEARNER_STATE} is missing"):
        find_checkpoint(str(new))


def test_evaluate_export_and_play_apply_the_same_rule(tmp_path, capsys):
    """They resolve through `resolve_checkpoint`: a trial gives its newest whole checkpoint, a checkpoint named
    directly that is not whole is refused in one line naming the file."""
    from spade_rllib.artifacts.checkpoint_layout import PolicyLoadError, resolve_checkpoint

    trial, old, new = _trial(tmp_path, "env_runner/state.pkl")
    assert resolve_checkpoint(trial).path == old
    with pytest.raises(PolicyLoadError) as e:
        resolve_checkpoint(new)
    assert "env_runner/state.pkl is missing" in str(e.value) and "\n" not in str(e.value)


def test_a_restore_never_repeats_a_certain_failure(tmp_path, capsys, monkeypatch):
    """A trial retry (training.max_failures) or a resume restores through `SpadePPO.restore_from_path`: a checkpoint
    that lost a file is replaced by the newest whole one before it, so no retry fails the same way again."""
    from ray.rllib.algorithms.ppo import PPO

    from spade_rllib.artifacts.checkpoint_layout import CheckpointError, restorable_checkpoint
    from spade_rllib.rllib.algorithm import SpadePPO

    trial, old, new = _trial(tmp_path, LEARNER_STATE)
    assert restorable_checkpoint(old) == old and restorable_checkpoint(new) == old
    assert LEARNER_STATE in capsys.readouterr().err
    restored = []
    monkeypatch.setattr(PPO, "restore_from_path", lambda self, path, *a, **k: restored.append(path))

    algo = SpadePPO.__new__(SpadePPO)  # no setup: only the restore path is exercised
    algo.learner_group = argparse.Namespace(foreach_learner=lambda fn: None)
    for _ in range(3):  # every retry restores the whole one
        algo.restore_from_path(str(new))
    assert restored == [str(old)] * 3
    algo.restore_from_path(str(new / "learner_group"), component="learner_group")  # a part: as given
    assert restored[-1] == str(new / "learner_group")
    shutil.rmtree(old)
    with pytest.raises(CheckpointError, match="no whole checkpoint before it"):
        restorable_checkpoint(new)


# ------------------------------------------------------------------------------------------------
# b. runs read together are distinct runs
# ------------------------------------------------------------------------------------------------

def _runs(tmp_path):
    from test_report import _set_final, write_run

    exp = tmp_path / "exp"
    first = write_run(exp, "quickstart_00000", iterations=4, seed=0)
    _set_final(first, bot_rusher=0.1)
    cont = write_run(exp, "quickstart_00001", iterations=8, seed=0)  # the resumed continuation of seed 0
    (cont / "runinfo.json").write_text(json.dumps({"resumed_from": str(first / "checkpoint_000004")}))
    _set_final(cont, bot_rusher=0.4)
    other = write_run(exp, "quickstart_00002", iterations=8, seed=1)
    _set_final(other, bot_rusher=0.6)
    return exp, first, cont, other


def test_a_continuation_is_joined_to_its_original(tmp_path):
    from spade_rllib.reporting import load_run
    from spade_rllib.reporting.seeds import seed_groups

    exp, first, cont, other = _runs(tmp_path)
    [group] = seed_groups([load_run(p) for p in (first, cont, other)])
    assert group.seeds == [0, 1] and [r.path for r in group.runs] == [cont, other]
    assert dict((r.key, r.values) for r in group.rows)["final/bot:rusher/score"] == (0.4, 0.6)
    assert any("quickstart_00001 resumes quickstart_00000" in n for n in group.notes)


def test_one_seed_twice_counts_once_with_a_note(tmp_path):
    from spade_rllib.reporting import load_run
    from spade_rllib.reporting.seeds import seed_groups

    exp, first, cont, other = _runs(tmp_path)
    (cont / "runinfo.json").unlink()  # a rerun of seed 0, not linked: still one seed
    [group] = seed_groups([load_run(p) for p in (first, cont, other)])
    assert group.seeds == [0, 1] and group.runs[0].path == cont  # the one with the most env steps
    assert any("same seed 0" in n and "counted once" in n for n in group.notes)
    assert seed_groups([load_run(first), load_run(first)]) == []  # the same trial twice: one run, no group


def test_report_reads_a_trial_given_twice_once(tmp_path, capsys):
    from spade_rllib.report import main

    exp, first, cont, other = _runs(tmp_path)
    assert main([str(exp), str(other), "--out", str(tmp_path / "r.html")]) == 0
    captured = capsys.readouterr()
    assert "is given 2 times; read once" in captured.err
    assert "seeds 0, 1 (2 runs" in captured.out and "seeds 0, 0" not in captured.out


# ------------------------------------------------------------------------------------------------
# c. bounds before work
# ------------------------------------------------------------------------------------------------

def test_exact_exploitability_is_refused_past_the_game_size_cap(monkeypatch):
    pytest.importorskip("pyspiel")
    from spade_rllib.games import exploitability as ex
    from spade_rllib.config.preflight import check_exploitability

    problem = ex.game_size_problem("phantom_ttt", 20_000)
    assert "more than 20,000 histories" in problem and "\n" not in problem
    assert ex.game_size_problem("leduc_poker") is None and ex.game_size_problem("kuhn_poker") is None
    assert ex.game_size_problem("leduc_poker", 1_000_000, 500) is not None  # 936 information states

    small = ex.game_size_problem.__wrapped__
    monkeypatch.setattr(ex, "game_size_problem", lambda game: small(game, 20_000))
    with pytest.raises(ConfigError, match=r"exploitability_interval = \d+: exact exploitability of 'phantom_ttt': .*"
                                          r"more than 20,000 histories.*set it to 0"):
        load_config(KUHN, ["env.id=openspiel:phantom_ttt"])  # the config's own checks (preflight) refuse it
    check_exploitability(load_config(KUHN))
    with pytest.raises(ex.GameTooLarge, match="20,000"):
        ex.info_states.__wrapped__("phantom_ttt")


def test_a_teacher_is_measured_before_training_and_refused_past_its_limit(capsys):
    from spade_rllib.training.teacher_cost import check_teacher_cost, measure_teacher

    slow = itertools.count(0.0, 0.004)  # every clock reading 4 ms after the last: each call takes 4 ms
    cfg = load_config(CONNECT_FOUR, ["agent.teacher=tactical", "agent.teacher_max_ms=1"])
    cost = measure_teacher(cfg, steps=8, clock=lambda: next(slow))
    assert cost.calls == 8 and cost.ms_per_step == pytest.approx(4.0)
    with pytest.raises(ConfigError, match=r"agent.teacher = 'tactical': 4.000 ms per learner step .* past "
                                          r"agent.teacher_max_ms = 1"):
        check_teacher_cost(cfg, steps=8, clock=lambda: next(slow))
    cfg = load_config(CONNECT_FOUR, ["agent.teacher=tactical", "training.stop.env_steps=1000000"])
    assert check_teacher_cost(cfg, steps=8).calls == 8  # measured for real: printed, not refused
    line = capsys.readouterr().out.strip()
    assert line.startswith("teacher 'tactical': ") and "ms per learner step" in line and "1,000,000" in line
    assert check_teacher_cost(load_config(CONNECT_FOUR)) is None  # no teacher: nothing measured


def test_a_sweep_measures_its_teacher_before_ray(tmp_path, capsys):
    from spade_rllib.tune import main

    argv = ["--sweep", "lr_gamma", "--dry-run", "--storage", str(tmp_path / "sw"), "--set", "agent.teacher=raider"]
    assert main([*argv, "--set", "agent.teacher_max_ms=0.00001"]) == 2
    assert "past agent.teacher_max_ms = 1e-05" in capsys.readouterr().err
    assert main(argv) == 0 and "teacher 'raider': " in capsys.readouterr().out


# ------------------------------------------------------------------------------------------------
# d. every bench path through the one shared check, before Ray
# ------------------------------------------------------------------------------------------------

def _refused(capsys, fn, *args) -> str:
    with pytest.raises(SystemExit) as e:
        fn(*args)
    assert e.value.code == 2
    err = [line for line in capsys.readouterr().err.strip().splitlines() if line.strip()]
    assert len(err) == 1 and err[0].startswith("error: "), err
    return err[0]


def test_the_poker_league_bench_checks_its_arguments_before_ray(tmp_path, capsys, monkeypatch):
    pytest.importorskip("pyspiel")
    sys.path.insert(0, str(ROOT))
    import ray

    monkeypatch.setattr(ray, "init", lambda *a, **k: pytest.fail("reached ray.init"))
    from bench.ablations import league_claim

    afile = tmp_path / "afile"
    afile.write_text("x")
    out = ["--out-dir", str(tmp_path / "o")]
    for argv, needle in ((["--cpus", "0"], "--cpus 0"), (["--set", "agent.lrr=1"], "arm mirror: agent.lrr"),
                         (["--out-dir", str(afile)], "is a file"),
                         (["--set", "evaluation.exploitability_interval=-1"], "exploitability_interval = -1")):
        assert needle in _refused(capsys, league_claim.main, ["--game", "kuhn", *out, *argv])
    assert not (tmp_path / "o").exists()


def test_the_ablation_benches_share_the_check(tmp_path, capsys, monkeypatch):
    sys.path.insert(0, str(ROOT))
    import ray

    monkeypatch.setattr(ray, "init", lambda *a, **k: pytest.fail("reached ray.init"))
    from bench.ablations import curriculum_ablation

    assert "--cpus 0" in _refused(capsys, curriculum_ablation.main, ["--cpus", "0", "--out-dir", str(tmp_path / "o")])


def test_the_learner_bench_scopes_its_overrides_and_checks_every_row_before_ray(capsys, monkeypatch):
    sys.path.insert(0, str(ROOT))
    from bench.speed import learner_ceiling

    args = learner_ceiling.parse_args(["--config", CONNECT_FOUR, "--models", "lstm,mlp"])
    assert not any(o.startswith("env.difficulty") for o in args.row_overrides["mlp"])  # not a level game
    assert "agent.model.memory=none" in args.row_overrides["mlp"]
    args = learner_ceiling.parse_args(["--config", QUICKSTART, "--models", "mlp"])
    assert "env.difficulty=4" in args.row_overrides["mlp"]
    assert "agent.lrr" in _refused(capsys, learner_ceiling.parse_args, ["--config", QUICKSTART, "--set", "agent.lrr=1"])
    monkeypatch.setitem(learner_ceiling.MODELS, "mlp", (*learner_ceiling.MODELS["mlp"], "agent.model.hidden=[0]"))
    line = _refused(capsys, learner_ceiling.parse_args, ["--config", QUICKSTART, "--models", "lstm,mlp"])
    assert line.startswith("error: --models mlp (its overrides") and "agent.model.hidden" in line


# ------------------------------------------------------------------------------------------------
# e. a teacher's settings without a teacher
# ------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("sets, words", [
    (["agent.teacher_coeff=0.5"], "agent.teacher_coeff = 0.5: set but agent.teacher is null"),
    (["agent.teacher_max_ms=5"], "agent.teacher_max_ms = 5"),
    (["agent.teacher=nobody"], "agent.teacher = 'nobody': unknown bot"),
    (["agent.teacher=raider"], "CartPole-v1 has no scripted bots; scripted bots only exist for"),
])
def test_teacher_settings_without_a_teacher_are_refused(sets, words):
    with pytest.raises(ConfigError) as e:
        load_config(CARTPOLE if "raider" in str(sets) else QUICKSTART, sets)
    assert words in str(e.value) and "\n" not in str(e.value), str(e.value)
    assert load_config(QUICKSTART, ["agent.teacher_coeff=1.0"]).agent.teacher is None  # the default: nothing ignored


# ------------------------------------------------------------------------------------------------
# f. an exported league folder belongs to one run
# ------------------------------------------------------------------------------------------------

def _league_run(root: Path, snapshots: int) -> Path:
    from spade_rllib.league import League, LeagueConfig
    from spade_rllib.testing.tiny_checkpoints import build_module, save_tiny_checkpoint

    ckpt = save_tiny_checkpoint(root, "MazeRace-v0")
    league = League(LeagueConfig())
    for g in range(1, snapshots + 1):
        _, module = build_module("MazeRace-v0", seed=g)
        league.add_snapshot({k: np.asarray(v) for k, v in module.get_state().items()}, 10 * g)
    with open(ckpt / "algorithm_state.pkl", "wb") as f:
        pickle.dump({"spade_components": {"league": {"league": league.state_dict()}}}, f)
    return ckpt


def test_an_export_folder_belongs_to_one_run(tmp_path, capsys):
    from spade_rllib.export import main

    a, b = _league_run(tmp_path / "run_a", 2), _league_run(tmp_path / "run_b", 1)
    out = tmp_path / "league"

    def export(ckpt, *more):
        return main(["--checkpoint", str(ckpt.parent), "--module", "league:uniform", "--out", str(out), "--no-check", *more])

    assert export(a) == 0
    assert {p.name for p in out.iterdir()} == {"main.onnx", "main_v1.onnx", "main_v2.onnx", "mixture.json"}
    capsys.readouterr()
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    assert export(b) == 2  # another run's league: refused, nothing changed
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "holds the league export of another run" in err[0] and "--replace" in err[0]
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before
    assert export(b, "--replace") == 0  # replaced: the old run's members are gone
    assert {p.name for p in out.iterdir()} == {"main.onnx", "main_v1.onnx", "mixture.json"}
    manifest = json.loads((out / "mixture.json").read_text())
    assert manifest["run"] == str(b.parent.resolve()) and sorted(m["member"] for m in manifest["members"]) == ["main", "main_v1"]
    assert export(b) == 0  # its own run again: written over without a flag


# ------------------------------------------------------------------------------------------------
# g. damaged run files in report
# ------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("where, name, damage, named", [
    ("trial", "result.json", "append:[1, 2]", "result.json:9: holds a list"),
    ("trial", "result.json", "append:{cut in the middle", "result.json:9: not a JSON result"),
    ("trial", "final_evaluation.json", "[1]", "final_evaluation.json:1: holds a list"),
    ("trial", "config.yaml", "a: [\n", "config.yaml:2: damaged YAML"),
    ("trial", "runinfo.json", "{cut", "runinfo.json:1: damaged JSON"),
    ("eval", "eval_config.json", '{"checkpoints": 5}', "eval_config.json: checkpoints = 5"),
    ("eval", "ratings.csv", "rank,player,kind,elo,games\n1,main,bot,abc,3\n", "ratings.csv:2: elo = 'abc' is not a number"),
    ("eval", "payoff.csv", "player,opponent,games\nmain\n", "payoff.csv:2: 1 fields where the header has 3"),
])
def test_damaged_run_files_are_named_and_the_rest_renders(tmp_path, capsys, where, name, damage, named):
    from test_report import write_eval, write_run

    from spade_rllib.report import main

    trial = write_run(tmp_path / "exp")
    ev = write_eval(tmp_path, trial)
    target = (trial if where == "trial" else ev) / name
    if damage.startswith("append:"):
        last = target.read_text().splitlines()[-1]
        target.write_text(target.read_text() + damage[len("append:"):] + "\n" + last + "\n")
    else:
        target.write_text(damage)
    out = tmp_path / "r.html"
    assert main([str(tmp_path / "exp"), str(ev), "--out", str(out)]) == 2
    err = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert len(err) == 1 and err[0].startswith("error: ") and named in err[0] and str(target.parent) in err[0], err
    assert out.is_file() and "quickstart_00000" in out.read_text()  # everything else is in the report


def test_a_result_line_cut_short_by_a_killed_driver_is_not_an_error(tmp_path, capsys):
    from test_report import write_run

    from spade_rllib.report import main

    trial = write_run(tmp_path / "exp")
    with open(trial / "result.json", "a") as f:
        f.write('{"training_iteration": 9, "env_run')  # no newline: the write was cut short
    assert main([str(trial), "--out", str(tmp_path / "r.html")]) == 0
