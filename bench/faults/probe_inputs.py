"""Bad inputs on every command line: each must end with one line and exit 2, create nothing, never hang.

    python bench/faults/probe_inputs.py [--only train,export] [--timeout 120] [--verbose]

Each probe runs `python -m spade_rllib.<cli> ...` (through a launcher that makes `ray.init` exit 99,
so a probe that is not refused never starts a cluster) as a subprocess in a scratch working directory
(with a tiny checkpoint, a truncated copy, a copy with a symlink leading out, bad maps, a regular
file and a read-only directory to aim at). A probe is *clean* when it exits 2 within the timeout, its
output (stdout + stderr, blank lines and `note:` lines aside) is one line without a traceback
(argparse's own usage lines + `error:` line count as one message), and no file appeared in the scratch
directory. Ends with one JSON line: {"tried": N, "clean": M, "by_kind": {...}, "failed": [...],
"probes": [{"command", "expected", "observed", "seconds"}, ...], "inputs_unchanged": bool, "load_average": [...]}.

A third set (`third_probes`): a resume that changes the model, the final held-out line's maps, every
trial of a sweep, the benches' command lines, types converted before they were validated.

A fourth set (`fourth_probes`, docs/reliability.md "Round four"): a checkpoint that lost a file the restore
reads (resume falls back, evaluate/export/play name the file), the game-size cap of exact exploitability, a
teacher's cost limit, a teacher's weight without a teacher, the poker and learner benches' command lines, an
export folder of another run, damaged run files and one trial given twice in `report`.

A second set of families (`more_probes`) covers loading, resuming, overwriting and sizing: damaged
or NaN weights, a damaged newest checkpoint, resume against another env or model, outputs aimed
into a checkpoint or over a foreign file, storage URIs and experiment names, YAML duplicates and
alias bombs, counts without bounds, an unwinnable CTF map, a missing env dependency. Most are
refusals judged as above; a few have a documented correct behaviour instead (`Expect`: an exit
code, text the output must hold, the one file it may create). The fixture tree (the inputs) is
hashed before and after every probe: a probe that changes an input fails, whatever it printed.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import pickle
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
QUICKSTART = str(ROOT / "tune_configs" / "quickstart.yaml")
MAZERACE = str(ROOT / "tune_configs" / "mazerace.yaml")
AS_USER = hasattr(os, "geteuid") and os.geteuid() != 0
"""Read-only directories only stop a non-root user; as root those probes are left out."""


LAUNCHER = """
import runpy, sys
import ray
def _refuse(*args, **kwargs):  # a probe that gets this far was not refused up front
    print("probe: reached ray.init", file=sys.stderr)
    raise SystemExit(99)
ray.init = _refuse
module = sys.argv.pop(1)
sys.argv[0] = module
runpy.run_module(module, run_name="__main__", alter_sys=True)
"""
"""Runs a CLI like `python -m` but never starts Ray: reaching `ray.init` exits 99 (a failed probe).
A probe's `cli` is a `spade_rllib` command (`train`) or a bench module (`bench.ablations.league_claim`)."""


def module_of(cli: str) -> str:
    """The module a probe runs: `bench.x` as it is, a bare name under `spade_rllib`."""
    return cli if "." in cli else f"spade_rllib.{cli}"


def make_fixtures(work: Path) -> dict:
    """Files the probes point at; returns their paths by name."""
    from spade_rllib.testing.tiny_checkpoints import save_tiny_checkpoint

    fx = work / "fixtures"
    fx.mkdir()
    good = save_tiny_checkpoint(fx / "trial", "MazeRace-v0", snapshots=1)
    cut = fx / "cut_trial"
    shutil.copytree(fx / "trial", cut)
    for pkl in (cut / good.name).rglob("module_state.pkl"):
        data = pkl.read_bytes()
        pkl.write_bytes(data[: len(data) // 2])  # a write cut short by a killed driver
    escape = fx / "escape_trial"
    shutil.copytree(fx / "trial", escape)
    secret = fx / "outside.txt"
    secret.write_text("not part of any checkpoint")
    (escape / good.name / "notes.txt").symlink_to(secret)
    (fx / "afile").write_text("a regular file\n")
    ro = fx / "readonly"
    ro.mkdir()
    ro.chmod(0o555)
    (fx / "no_flag.txt").write_text("#####\n#A.B#\n#####\n")
    (fx / "binary.txt").write_bytes(bytes(range(256)) * 4)
    (fx / "three_v_three.txt").write_text("#########\n#AAA.BBB#\n#...F...#\n#########\n")
    (fx / "empty.yaml").write_text("")
    (fx / "junk.yaml").write_bytes(b"\x00\xff\xfe{{{:::\x01")
    (fx / "list.yaml").write_text("- a\n- b\n")
    (fx / "stop_empty.yaml").write_text((ROOT / "tune_configs" / "quickstart.yaml").read_text().replace(
        "stop: {env_steps: 3500000, time_s: 900}", "stop: {}"))
    heldout_dir = fx / "heldout_bad"
    heldout_dir.mkdir()
    (heldout_dir / "bad.txt").write_text("#####\n#A.B#\n#####\n")
    empty_dir = fx / "no_maps"
    empty_dir.mkdir()
    more = make_more_fixtures(fx, good.name)
    more.update(make_third_fixtures(fx))
    more.update(make_fourth_fixtures(fx))
    return {**more, "good": str(fx / "trial"), "cut": str(cut), "escape": str(escape), "afile": str(fx / "afile"),
            "ro": str(ro), "no_flag": str(fx / "no_flag.txt"), "binary": str(fx / "binary.txt"),
            "three": str(fx / "three_v_three.txt"), "empty": str(fx / "empty.yaml"), "junk": str(fx / "junk.yaml"),
            "list": str(fx / "list.yaml"), "stop_empty": str(fx / "stop_empty.yaml"),
            "heldout_bad": str(heldout_dir), "no_maps": str(empty_dir)}


STATE = Path("learner_group") / "learner" / "rl_module" / "main" / "module_state.pkl"


def _with_state(src: Path, dst: Path, ckpt_name: str, change) -> str:
    shutil.copytree(src, dst)
    file = dst / ckpt_name / STATE
    file.write_bytes(pickle.dumps(change(pickle.loads(file.read_bytes()))))
    return str(dst)


def make_more_fixtures(fx: Path, ckpt_name: str) -> dict:
    """Inputs of the second set of families (weights, resume, outputs, YAML, maps, bounds)."""
    import numpy as np

    trial = fx / "trial"
    out = {
        "empty_state": _with_state(trial, fx / "empty_state", ckpt_name, lambda s: {}),
        "vf_only": _with_state(trial, fx / "vf_only", ckpt_name, lambda s: {k: v for k, v in s.items() if k.startswith("vf_")}),
        "nan_state": _with_state(trial, fx / "nan_state", ckpt_name,
                                 lambda s: {**s, "pi_head.weight": np.full_like(s["pi_head.weight"], np.nan)}),
    }
    two = fx / "two_ckpts"  # a newer checkpoint_000001 whose metadata is damaged: the loader falls back to 000000
    shutil.copytree(trial, two)
    shutil.copytree(two / ckpt_name, two / "checkpoint_000001")
    (two / "checkpoint_000001" / "rllib_checkpoint.json").write_text("{cut sho")
    out["damaged_newest"] = str(two)
    snap = fx / "nan_snapshot"
    shutil.copytree(trial, snap)
    state_file = snap / ckpt_name / "algorithm_state.pkl"
    state = pickle.loads(state_file.read_bytes())
    member = state["spade_components"]["league"]["league"]["members"][0]
    member["weights"] = {k: np.asarray(v) * np.nan for k, v in member["weights"].items()}
    state_file.write_bytes(pickle.dumps(state))
    out["nan_snapshot"] = str(snap)
    ctf_trial = fx / "ctf_config_trial"  # its config.yaml now names another env
    shutil.copytree(trial, ctf_trial)
    (ctf_trial / "config.yaml").write_text(Path(QUICKSTART).read_text())
    out["ctf_config_trial"] = str(ctf_trial)
    cfg_trial = fx / "config_only_trial"  # config.yaml, no runinfo.json
    shutil.copytree(trial, cfg_trial)
    (cfg_trial / "config.yaml").write_text(Path(MAZERACE).read_text().replace(
        "hidden: [128, 128]", "hidden: [16]").replace("vf_share_layers: true", "vf_share_layers: false"))
    out["config_only_trial"] = str(cfg_trial)
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]" for i in range(1, 10)]
    (fx / "alias_bomb.yaml").write_text(Path(MAZERACE).read_text() + "\n".join(lines) + "\n")
    (fx / "dup_key.yaml").write_text(Path(MAZERACE).read_text().replace("  lr: 0.0005\n", "  lr: 0.0005\n  lr: 0.5\n"))
    (fx / "twice.yaml").write_text(Path(MAZERACE).read_text() + "agent:\n  lr: 0.001\n")
    (fx / "car.yaml").write_text("env: {id: CarRacing-v3}\ntraining: {stop: {iterations: 1}}\n")
    (fx / "unwinnable.txt").write_text("########\n#A.ab.B#\n########\n")
    (fx / "huge_map.txt").write_text("\n".join(["#" * 2000] * 2000) + "\n")
    # A module in the working directory that leaves a mark when imported (the probes' cwd is fx's parent).
    (fx.parent / "evil.py").write_text('print("EVIL RAN")\nopen("evil_ran.txt", "w").write("x")\n')
    eval_dir = fx / "earlier_eval"
    eval_dir.mkdir()
    (eval_dir / "report.md").write_text("# an earlier report\n")
    out.update({k: str(fx / f) for k, f in (("alias_bomb", "alias_bomb.yaml"), ("dup_key", "dup_key.yaml"),
                                            ("twice", "twice.yaml"), ("car", "car.yaml"), ("unwinnable", "unwinnable.txt"),
                                            ("huge_map", "huge_map.txt"))})
    out["earlier_eval"] = str(eval_dir)
    from spade_rllib.testing.tiny_checkpoints import save_tiny_checkpoint

    save_tiny_checkpoint(fx / "ctf_trial", env_id="CaptureTheFlag-v0")
    out["ctf_trial"] = str(fx / "ctf_trial")
    out["ckpt_name"] = ckpt_name
    return out


@dataclass(frozen=True)
class Expect:
    """A documented correct behaviour other than a refusal: exit `rc`, output holding `contains`,
    at most the one new path `creates` (relative to the scratch directory)."""

    rc: int
    contains: tuple[str, ...] = ()
    creates: str | None = None
    absent: tuple[str, ...] = ()
    """Text the output must not hold."""
    text: str = ""
    """What the behaviour is, for the report."""
    one_line: bool = True
    """An exit 2 must also be one line (a refusal); False where more is written (`report` names each damaged file
    after writing the report of the rest)."""


def more_probes(f: dict) -> list[tuple[str, str, list[str], Expect | None]]:
    """(kind, cli, args, expectation) of the second set of families; None expects a clean refusal."""
    m = ["--config", MAZERACE]

    def s(*items, base=None):
        out = list(base or m)
        for it in items:
            out += ["--set", it]
        return out

    ck = f["ckpt_name"]
    good = f["good"]
    refused = None
    starts = Expect(99, ("probe: reached ray.init",), text="passes every pre-Ray check and starts Ray (the launcher stops it)")
    return [
        # weights checked on every load
        ("weights", "export", ["--checkpoint", f["empty_state"], "--out", "m.onnx"], refused),
        ("weights", "export", ["--checkpoint", f["vf_only"], "--out", "m.onnx"], refused),
        ("weights", "export", ["--checkpoint", f["nan_state"], "--out", "m.onnx"], refused),
        ("weights", "evaluate", ["--checkpoint", f["empty_state"], "--local", "--out", "ev"], refused),
        ("weights", "evaluate", ["--checkpoint", f["nan_state"], "--local", "--out", "ev"], refused),
        ("weights", "play", ["--checkpoint", f["empty_state"]], refused),
        ("weights", "play", ["--checkpoint", f["nan_state"]], refused),
        ("weights", "play", ["--checkpoint", f["nan_snapshot"], "--module", "main_v1"], refused),
        ("weights", "train", ["--resume", f["empty_state"], "--config", MAZERACE], refused),
        ("weights", "train", ["--resume", f["nan_state"], "--config", MAZERACE], refused),
        ("weights", "train", s("agent.model.hidden=[16]", "agent.model.vf_share_layers=false",
                                base=["--resume", f["nan_snapshot"], "--config", MAZERACE]), refused),
        # one rule for the newest checkpoint
        ("newest checkpoint", "export", ["--checkpoint", f["damaged_newest"], "--out", "fallback.onnx", "--no-check"],
         Expect(0, ("note: skipping incomplete checkpoint", "checkpoint_000001"), creates="fallback.onnx",
                text="exports checkpoint_000000 with a note naming the damaged checkpoint_000001")),
        # resume compatibility
        ("resume", "train", ["--resume", f["ctf_config_trial"]], refused),
        ("resume", "train", ["--resume", good, "--config", MAZERACE], refused),
        ("resume", "train", ["--resume", f["config_only_trial"], "--print-config"],
         Expect(0, ("hidden:", "- 16"), text="reads the trial's config.yaml (no runinfo.json needed)")),
        ("resume", "train", ["--resume", f["config_only_trial"]],
         Expect(99, ("probe: reached ray.init",), text="a trial with config.yaml but no runinfo.json resumes")),
        # outputs never clobber inputs
        ("output", "export", ["--checkpoint", good, "--out", f"{good}/{ck}/{STATE}"], refused),
        ("output", "export", ["--checkpoint", good, "--out", f"{good}/{ck}/main.onnx"], refused),
        ("output", "export", ["--checkpoint", good, "--out", f["afile"]], refused),
        ("output", "evaluate", ["--checkpoint", good, "--local", "--out", f["earlier_eval"]], refused),
        ("output", "evaluate", ["--checkpoint", good, "--local", "--out", f"{good}/{ck}/ev"], refused),
        # storage URIs, experiment names
        ("storage", "train", s("experiment.storage_path=s3://bucket/x"), starts),
        ("storage", "train", s("experiment.storage_path=ftp://host/x"), refused),
        ("storage", "train", s("experiment.storage_path=s3:///x"), refused),
        ("storage", "train", s("experiment.name=../x"), refused),
        ("storage", "train", s("experiment.name=/abs/x"), refused),
        ("storage", "tune", ["--sweep", "lr_gamma", "--dry-run", "--storage", "ftp://host/x",
                             "--set", "evaluation.heldout_levels=[]"], refused),
        # before Ray
        ("before Ray", "train", s("experiment.seed=4294967296"), refused),
        ("before Ray", "train", s("agent.model.hidden=[1000000000]"), refused),
        ("before Ray", "train", s("agent.model.hidden=[65536, 65536]"), refused),
        ("before Ray", "train", ["--config", f["car"]], refused),
        ("before Ray", "train", m + ["--final-eval-games", "-5"], refused),
        ("before Ray", "train", s("agent.lr=fast") + ["--debug"],
         Expect(1, ("Traceback", "ConfigError"), text="--debug shows the traceback of a config error")),
        # YAML
        ("yaml", "train", ["--config", f["alias_bomb"]], refused),
        ("yaml", "train", ["--config", f["dup_key"]], refused),
        ("yaml", "train", ["--config", f["twice"]], refused),
        ("yaml", "train", s("env.kwargs=[&a [x, x, x, x, x, x, x, x, x, x], &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a], "
                            "&c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b], &d [*c, *c, *c, *c, *c, *c, *c, *c, *c, *c], "
                            "&e [*d, *d, *d, *d, *d, *d, *d, *d, *d, *d], [*e, *e, *e, *e, *e, *e, *e, *e, *e, *e]]"), refused),
        ("yaml", "train", s("experiment.name='1e3'") + ["--print-config"],
         Expect(0, ("name: '1e3'",), text="a quoted 1e3 stays a string")),
        # bounds on every count that sizes work
        ("bounds", "evaluate", ["--checkpoint", good, "--local", "--out", "ev", "--levels", "generated:1000000@5"], refused),
        ("bounds", "evaluate", ["--checkpoint", good, "--local", "--out", "ev", "--games-per-pair", "1000000000"], refused),
        ("bounds", "evaluate", ["--checkpoint", good, "--local", "--out", "ev", "--bootstrap", "1000000000"], refused),
        ("bounds", "tune", ["--sweep", "lr_gamma", "--num-samples", "1000000000", "--dry-run"], refused),
        ("bounds", "train", s("agent.train_batch_size=1e12"), refused),
        ("bounds", "train", s("evaluation.games=1e9"), refused),
        ("bounds", "train", s("env.kwargs={max_steps: 1000000000000}"), refused),
        ("bounds", "train", s("resources.num_cpus=100000"), refused),
        ("bounds", "train", s(f"env.level_file={f['huge_map']}", base=["--config", QUICKSTART]), refused),
        ("bounds", "play", ["--checkpoint", good, "--level", f["huge_map"]], refused),
        # env ids are imported only at the point of use: --print-config imports nothing
        ("env id", "train", s("env.id=evil:env", "env.difficulty=null", "evaluation.opponents=[random]") + ["--print-config"],
         Expect(0, ("id: evil:env",), absent=("EVIL RAN",), text="prints the config without importing ./evil.py")),
        ("env id", "train", s("env.id=this:x", "env.difficulty=null", "evaluation.opponents=[random]") + ["--print-config"],
         Expect(0, ("id: this:x",), absent=("Beautiful is better",), text="prints the config without importing `this`")),
        # maps follow the movement rules
        ("maps", "train", s(f"env.level_file={f['unwinnable']}", base=["--config", QUICKSTART]), refused),
        ("maps", "play", ["--checkpoint", f["ctf_trial"], "--level", f["unwinnable"]], refused),
    ]


FLAGSHIP = str(ROOT / "tune_configs" / "flagship.yaml")


def make_third_fixtures(fx: Path) -> dict:
    """Inputs of the third set: a CTF trial with a memory map, a trial whose config.yaml is damaged,
    two sweeps whose trials break a rule or do not fit, a bench out-dir holding a unit cut in half."""
    from spade_rllib.testing.tiny_checkpoints import save_tiny_checkpoint

    save_tiny_checkpoint(fx / "ctf_seen_trial", "CaptureTheFlag-v0", env_kwargs={"seen_map": 5})
    bad_yaml = fx / "bad_yaml_trial"
    shutil.copytree(fx / "trial", bad_yaml)
    (bad_yaml / "config.yaml").write_text("agent: {lr: [\n")
    sweep = ("description: probe\nbase: {base}\noverrides: {over}\nspace:\n{space}scheduler: {{type: none}}\n"
             "metric: {{name: env_runners/episode_return_mean, mode: max}}\nbudget: {{num_samples: 1, stop: {{iterations: 2}}}}\n")
    (fx / "sweep_div.yaml").write_text(sweep.format(
        base=QUICKSTART, over="{curriculum.plr.score: learnability}",
        space="  resources.num_learners: {grid: [1, 2]}\n  agent.train_batch_size: {grid: [4000, 4001]}\n"))
    (fx / "sweep_cpu.yaml").write_text(sweep.format(
        base=QUICKSTART, over="{resources.num_cpus: 2}",
        space="  training.num_env_runners: {grid: [0, 8]}\n  agent.lr: {grid: [0.001]}\n"))
    units = fx / "claim_out" / "units"
    units.mkdir(parents=True)
    (units / "mirror_seed0.json").write_text('{"name": "mirror", "seed": 0, "env_st')
    return {"ctf_seen_trial": str(fx / "ctf_seen_trial"), "bad_yaml_trial": str(bad_yaml),
            "sweep_div": str(fx / "sweep_div.yaml"), "sweep_cpu": str(fx / "sweep_cpu.yaml"),
            "claim_out": str(fx / "claim_out")}


def third_probes(f: dict) -> list[tuple[str, str, list[str], Expect | None]]:
    """(kind, cli, args, expectation) of the third set of families: each a clean refusal before Ray."""
    tiny = ["--set", "agent.model.hidden=[16]", "--set", "agent.model.vf_share_layers=false"]
    flag = ["--config", FLAGSHIP]

    def s(*items, base=flag):
        out = list(base)
        for it in items:
            out += ["--set", it]
        return out

    claim = ["--game", "ctf", "--out-dir", "claim"]
    refused = None

    def naming(*text):  # refused in one line, for the reason named
        return Expect(2, tuple(text), text=f"refused in one line naming {' / '.join(text)}")

    return [
        # a resume that changes the model (keys recorded only when on; the saved tensors)
        ("resume model", "train", ["--resume", f["config_only_trial"], "--set", "agent.model.memory=lstm"], naming("(agent.model.memory)")),
        ("resume model", "train", ["--resume", f["config_only_trial"], "--set", "agent.model.encoder=cnn"], naming("(agent.model.encoder)")),
        ("resume model", "train", ["--resume", f["config_only_trial"], "--set", "agent.model.activation=relu"], naming("(agent.model.activation)")),
        ("resume model", "train", ["--resume", f["ctf_seen_trial"], *flag, *tiny, "--set", "env.kwargs.seen_map=5",
                                   "--set", "agent.model.map_channels=[8]"], naming("(agent.model.map_channels)")),
        # the final held-out line's maps, before training
        ("final held-out", "train", s(f"evaluation.final_heldout_levels=[{f['heldout_bad']}]"), naming("evaluation.final_heldout_levels: bad map")),
        ("final held-out", "train", s(f"evaluation.final_heldout_levels=[{f['no_maps']}]"), naming("holds no *.txt maps")),
        ("final held-out", "train", s(f"evaluation.final_heldout_levels=[{ROOT / 'spade_rllib' / 'levels' / 'heldout'}]"), naming("is a MazeRace-v0 map")),
        ("final held-out", "train", s("evaluation.final_heldout_max_size=3"), naming("final_heldout_max_size = 3")),
        # every trial of a sweep, also with --dry-run
        ("sweep trials", "tune", ["--sweep", f["sweep_div"], "--dry-run", "--storage", "sw"], naming("the trial with", "not divisible")),
        ("sweep trials", "tune", ["--sweep", f["sweep_cpu"], "--dry-run", "--storage", "sw"], naming("the trial with", "asks for 9 CPUs")),
        ("sweep trials", "tune", ["--sweep", f["sweep_cpu"], "--storage", "sw"], naming("the trial with", "asks for 9 CPUs")),
        # benches check their command line before Ray
        ("bench args", "bench.ablations.league_claim", ["--game", "ctf", "--out-dir", f["afile"]], refused),
        ("bench args", "bench.ablations.league_claim", [*claim, "--set", "agent.lrr=1"], refused),
        ("bench args", "bench.ablations.league_claim", [*claim, "--cpus", "0"], refused),
        ("bench args", "bench.ablations.league_claim", [*claim, "--max-map-size", "3"], refused),
        ("bench args", "bench.ablations.league_claim", ["--game", "ctf", "--out-dir", f["claim_out"]], naming("mirror_seed0.json: damaged JSON")),
        ("bench args", "bench.speed.driver_scale", ["--runners", "two"], refused),
        ("bench args", "bench.speed.train_speed", ["--seconds", "nan"], refused),
        ("bench args", "bench.speed.train_speed", ["--set", "agent.lrr=1"], refused),
        # types validated before they are converted; the cause named
        ("types", "train", s("curriculum.uniform.families=5"), refused),
        ("types", "train", s("curriculum.uniform.families={maze: 1}"), refused),
        ("types", "train", s("env.kwargs.seen_map=15", "agent.model.map_channels=[4096, 4096, 4096, 4096]"),
         Expect(2, ("agent.model.map_channels = [4096, 4096, 4096, 4096]: out of range",), absent=("agent.model.hidden",),
                text="the memory refusal names map_channels, the cause")),
        ("types", "train", ["--resume", f["bad_yaml_trial"]], naming("config.yaml")),
        ("types", "evaluate", ["--checkpoint", f["bad_yaml_trial"], "--local", "--out", "ev"], naming("config.yaml is damaged")),
    ]


OLD_RUN = ROOT / "tests" / "fixtures" / "checkpoint_before_issue12"
LOST = "learner_group/learner/state.pkl"


def make_fourth_fixtures(fx: Path) -> dict:
    """Inputs of the fourth set: a real trial whose newest checkpoint lost its learner state file, an export folder
    of another run, a trial with a result line that is not an object and a clean one."""
    lost = fx / "lost_trial"
    shutil.copytree(OLD_RUN, lost)
    shutil.copytree(lost / "checkpoint_000000", lost / "checkpoint_000001")
    (lost / "checkpoint_000001" / LOST).unlink()
    other = fx / "other_export"
    other.mkdir()
    (other / "mixture.json").write_text(json.dumps({"format": "spade_rllib.league_mixture", "version": 1,
                                                    "run": str(fx / "another_run"), "members": []}))
    damaged = fx / "damaged_run"
    damaged.mkdir()
    (damaged / "result.json").write_text('{"training_iteration": 1}\n[1, 2]\n{"training_iteration": 2}\n')
    clean = fx / "clean_run"
    clean.mkdir()
    (clean / "result.json").write_text('{"training_iteration": 1}\n{"training_iteration": 2}\n')
    return {"lost_trial": str(lost), "lost_ckpt": str(lost / "checkpoint_000001"), "other_export": str(other),
            "damaged_run": str(damaged), "clean_run": str(clean)}


def fourth_probes(f: dict) -> list[tuple[str, str, list[str], Expect | None]]:
    """(kind, cli, args, expectation) of the fourth set of families (docs/reliability.md "Round four")."""
    def naming(*text):
        return Expect(2, tuple(text), text=f"refused in one line naming {' / '.join(text)}")

    kuhn = ["--config", str(ROOT / "tune_configs" / "kuhn_league.yaml")]
    c4 = ["--config", str(ROOT / "tune_configs" / "connect_four.yaml")]
    lost = f"{LOST} is missing"
    return [
        # one completeness rule: what the restore reads, from the checkpoint's own metadata
        ("checkpoint lost a file", "train", ["--resume", f["lost_trial"]],
         Expect(99, ("note: skipping incomplete checkpoint", LOST, "probe: reached ray.init"),
                text="resumes from the newest whole checkpoint, one note naming the lost file")),
        ("checkpoint lost a file", "train", ["--resume", f["lost_ckpt"]], naming(lost)),
        ("checkpoint lost a file", "evaluate", ["--checkpoint", f["lost_ckpt"], "--local", "--out", "ev"], naming(lost)),
        ("checkpoint lost a file", "export", ["--checkpoint", f["lost_ckpt"], "--out", "m.onnx"], naming(lost)),
        ("checkpoint lost a file", "play", ["--checkpoint", f["lost_ckpt"]], naming(lost)),
        # bounds before work
        ("bounds before work", "train", [*kuhn, "--set", "env.id=openspiel:phantom_ttt"],
         naming("more than 1,000,000 histories")),
        ("bounds before work", "train", [*c4, "--set", "agent.teacher=mcts1000", "--set", "agent.teacher_max_ms=1"],
         naming("past agent.teacher_max_ms = 1")),
        ("bounds before work", "train", [*c4, "--set", "agent.teacher=tactical"],
         Expect(99, ("teacher 'tactical':", "ms per learner step", "probe: reached ray.init"),
                text="prints the teacher's measured cost per step, then starts")),
        ("teacher", "train", ["--config", MAZERACE, "--set", "agent.teacher_coeff=0.5"], naming("agent.teacher_coeff = 0.5")),
        # every bench path through the shared check
        ("bench args", "bench.ablations.league_claim", ["--game", "kuhn", "--cpus", "0", "--out-dir", "claim"], naming("--cpus 0")),
        ("bench args", "bench.ablations.league_claim", ["--game", "kuhn", "--set", "agent.lrr=1", "--out-dir", "claim"],
         naming("arm mirror: agent.lrr")),
        ("bench args", "bench.ablations.league_claim", ["--game", "leduc", "--out-dir", f["afile"]], naming("is a file")),
        ("bench args", "bench.ablations.curriculum_ablation", ["--cpus", "0", "--out-dir", "abl"], naming("--cpus 0")),
        ("bench args", "bench.speed.learner_ceiling", ["--set", "agent.lrr=1"], naming("agent.lrr")),
        # an export folder belongs to one run
        ("export folder", "export", ["--checkpoint", f["good"], "--module", "league:uniform", "--out", f["other_export"]],
         naming("holds the league export of another run")),
        # runs read once, damaged files named
        ("report", "report", [f["damaged_run"], "--out", "r.html"],
         Expect(2, ("result.json:2: holds a list",), creates="r.html", one_line=False,
                text="writes the report of the rest, names the file and line, exit 2")),
        ("report", "report", [f["clean_run"], f["clean_run"], "--out", "r2.html"],
         Expect(0, ("is given 2 times; read once",), creates="r2.html", text="reads a trial given twice once, with a note")),
    ]


def probes(f: dict) -> list[tuple[str, str, list[str]]]:
    """(kind, cli, args) for every bad input."""
    q = ["--config", QUICKSTART]

    def s(*items):
        out = list(q)
        for it in items:
            out += ["--set", it]
        return out

    train = [
        ("type", s("agent.lr=fast")), ("type", s("agent.epochs=2.5")), ("type", s("training.num_env_runners=[1]")),
        ("type", s("agent.model.hidden=abc")), ("type", s("self_play.mode=5")), ("type", s("evaluation.opponents=random")),
        ("type", s("league.enabled=maybe")), ("type", s("env.kwargs=3")),
        ("range", s("agent.lr=-3")), ("range", s("agent.gamma=1.5")), ("range", s("agent.clip=0")),
        ("range", s("env.difficulty=99")), ("range", s("evaluation.target_win_rate=2")),
        ("range", s("training.num_envs_per_runner=0")), ("range", s("agent.minibatch_size=999999")),
        ("range", s("experiment.seed=-1")),
        ("nan/inf", s("agent.lr=.nan")), ("nan/inf", s("agent.gamma=.nan")), ("nan/inf", s("training.stop.time_s=.nan")),
        ("nan/inf", s("env.difficulty=.nan")), ("nan/inf", s("agent.lr=.inf")), ("nan/inf", s("agent.vf_clip=-.inf")),
        ("nan/inf", s("self_play.opponent_mix.random=.nan")),
        ("unknown key", s("agent.lrr=1")), ("unknown key", s("foo.bar=1")), ("unknown key", s("training.stop.tim_s=5")),
        ("unknown key", s("league.windw=3")),
        ("bot name", s("evaluation.opponents=[bot:nobody]")), ("bot name", s("self_play.opponent_mix={'bot:rushr': 0.1}")),
        ("map", s(f"env.level_file={f['no_flag']}")), ("map", s(f"env.level_file={f['binary']}")),
        ("map", s(f"env.level_file={f['three']}")), ("map", s(f"evaluation.heldout_levels=[{f['heldout_bad']}]")),
        ("map", s(f"evaluation.heldout_levels=[{f['no_maps']}]")), ("map", s("env.level_file=nope.txt")),
        ("env kwargs", s("env.kwargs={bogus: 1}")), ("env kwargs", s("env.kwargs={view_radius: -1}")),
        ("env kwargs", s("env.kwargs={agents_per_team: 3}")),
        ("storage", s(f"experiment.storage_path={f['afile']}/sub")), *([("storage", s(f"experiment.storage_path={f['ro']}/x"))] if AS_USER else []),
        ("resources", s("resources.num_cpus=1", "training.num_env_runners=3")),
        ("resources", s("resources.num_gpus_per_learner=1")),
        ("resources", s("resources.num_learners=4", "resources.num_cpus_per_learner=64")),
        ("stop", ["--config", f["stop_empty"]]), ("stop", s("training.stop.metric=env_runners/episode_return_maen",
                                                           "training.stop.target=1")),
        ("stop", s("training.stop.metric=env_runners/episode_return_mean")),
        ("config file", ["--config", f["empty"]]), ("config file", ["--config", f["junk"]]),
        ("config file", ["--config", f["list"]]), ("config file", ["--config", "nope.yaml"]), ("config file", []),
        ("--set syntax", q + ["--set", "agent.lr"]), ("--set syntax", q + ["--set", "=5"]),
        ("--set syntax", q + ["--set", "agent.lr=[1,"]),
        ("resume", ["--resume", "nope_dir"]), ("resume", ["--resume", f["cut"], "--config", QUICKSTART]),
        ("resume", ["--resume", f["afile"]]), ("resume", ["--resume", f["escape"], "--config", QUICKSTART]),
        ("argparse", ["--final-eval-games", "x"] + q),
    ]
    good, cut, escape, afile = f["good"], f["cut"], f["escape"], f["afile"]
    export = [
        ("output path", ["--checkpoint", good, "--out", f"{afile}/m.onnx"]),
        *([("output path", ["--checkpoint", good, "--out", f"{f['ro']}/m.onnx"])] if AS_USER else []),
        ("output path", ["--checkpoint", good, "--out", f["ro"]]),
        ("range", ["--checkpoint", good, "--out", "m.onnx", "--opset", "3"]),
        ("range", ["--checkpoint", good, "--out", "m.onnx", "--opset", "99"]),
        ("checkpoint", ["--checkpoint", "nope", "--out", "m.onnx"]),
        ("checkpoint", ["--checkpoint", cut, "--out", "m.onnx"]),
        ("checkpoint", ["--checkpoint", escape, "--out", "m.onnx"]),
        ("checkpoint", ["--checkpoint", afile, "--out", "m.onnx"]),
        ("module", ["--checkpoint", good, "--module", "nobody", "--out", "m.onnx"]),
    ]
    evaluate = [
        ("output path", ["--checkpoint", good, "--local", "--out", f"{afile}/ev"]),
        ("output path", ["--checkpoint", good, "--local", "--out", afile]),
        ("checkpoint", ["--checkpoint", "nope", "--local"]),
        ("checkpoint", ["--checkpoint", cut, "--local", "--games-per-pair", "2", "--bootstrap", "2", "--replays", "0"]),
        ("checkpoint", ["--checkpoint", escape, "--local"]),
        ("range", ["--checkpoint", good, "--local", "--games-per-pair", "0"]),
        ("range", ["--checkpoint", good, "--local", "--workers", "-1"]),
        ("levels", ["--checkpoint", good, "--local", "--levels", "nonsense:3"]),
        ("bot name", ["--checkpoint", good, "--local", "--bots", "nobody"]),
        ("env id", ["--checkpoint", good, "--local", "--env", "Nope-v9"]),
    ]
    play = [
        ("range", ["--checkpoint", good, "--difficulty", "99"]), ("range", ["--checkpoint", good, "--difficulty", "nan"]),
        ("map", ["--checkpoint", good, "--level", f["no_flag"]]), ("map", ["--checkpoint", good, "--level", f["binary"]]),
        ("checkpoint", ["--checkpoint", "nope"]), ("checkpoint", ["--checkpoint", cut]),
        ("checkpoint", ["--checkpoint", escape]), ("module", ["--checkpoint", good, "--module", "nobody"]),
        ("env id", ["--checkpoint", good, "--env", "Nope-v9"]),
    ]
    tune = [
        ("sweep", ["--sweep", "nope"]), ("sweep", []),
        ("storage", ["--sweep", "lr_gamma", "--smoke", "--dry-run", "--storage", f"{afile}/x"]),
        ("range", ["--sweep", "lr_gamma", "--num-samples", "0", "--dry-run"]),
        ("range", ["--sweep", "lr_gamma", "--gpus-per-trial", "-1", "--dry-run"]),
        ("nan/inf", ["--sweep", "lr_gamma", "--dry-run", "--set", "agent.gamma=.nan"]),
        ("--set syntax", ["--sweep", "lr_gamma", "--dry-run", "--set", "agent.lr"]),
        ("resume", ["--sweep", "lr_gamma", "--resume", "--storage", "nowhere"]),
    ]
    out = []
    for cli, items in (("train", train), ("export", export), ("evaluate", evaluate), ("play", play), ("tune", tune)):
        out += [(kind, cli, args) for kind, args in items]
    return out


def snapshot(work: Path) -> set[str]:
    """Paths under the scratch directory's parent (our own folder, so a write to `../x` shows), fixtures aside."""
    root = work.parent
    out = set()
    for p in root.rglob("*"):
        rel = p.relative_to(root)
        if rel.parts[:2] != ("work", "fixtures"):
            out.add(str(rel))
    return out


def tree_hash(root: Path) -> str:
    """sha256 over every path, mode and file content under `root` (the probes' inputs)."""
    h = hashlib.sha256()
    for p in sorted(root.rglob("*")):
        h.update(str(p.relative_to(root)).encode())
        if p.is_symlink():
            h.update(os.readlink(p).encode())
        elif p.is_file():
            h.update(p.read_bytes())
    return h.hexdigest()


def judge(rc: int, text: str) -> tuple[bool, str]:
    lines = [ln for ln in text.splitlines() if ln.strip() and not ln.startswith("note:")]
    if "Traceback" in text:
        return False, "traceback"
    if rc != 2:
        return False, f"exit {rc}"
    if lines and lines[0].startswith("usage:") and ": error:" in lines[-1] and all(ln[:1].isspace() for ln in lines[1:-1]):
        return True, "argparse"
    if len(lines) != 1:
        return False, f"{len(lines)} lines"
    return True, "one line"


def judge_expected(rc: int, text: str, expect: Expect) -> tuple[bool, str]:
    if rc != expect.rc:
        return False, f"exit {rc}, expected {expect.rc}"
    missing = [c for c in expect.contains if c not in text]
    if missing:
        return False, f"output lacks {missing[0]!r}"
    present = [c for c in expect.absent if c in text]
    if present:
        return False, f"output holds {present[0]!r}"
    if "Traceback" in text and "Traceback" not in expect.contains:
        return False, "traceback"
    return True, expect.text or f"exit {rc}"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--only", default="", help="comma-separated CLIs to probe (default: all)")
    ap.add_argument("--families", default="all", choices=("all", "first", "more", "third", "fourth"),
                    help="the first set of families, the second (load/resume/overwrite/size), the third (a resume "
                         "that changes the model, the final held-out maps, sweep trials, benches, types), the fourth "
                         "(lost checkpoint files, bounds before work, bench paths, export folders, report), or all")
    ap.add_argument("--timeout", type=float, default=120.0, help="seconds before a probe counts as a hang")
    ap.add_argument("--verbose", action="store_true", help="print every probe's output line")
    args = ap.parse_args(argv)
    only = {c for c in args.only.split(",") if c}
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
           "SPADE_DEBUG": "0"}
    by_kind: dict[str, list[int]] = {}
    failed, records = [], []
    inputs_unchanged = True
    load_before = os.getloadavg() if hasattr(os, "getloadavg") else None
    t0 = time.time()
    with tempfile.TemporaryDirectory(prefix="spade_probe_") as tmp:
        work = Path(tmp) / "work"
        work.mkdir()
        fx = make_fixtures(work)
        listing: list[tuple[str, str, list[str], Expect | None]] = []
        if args.families in ("all", "first"):
            listing += [(kind, cli, cli_args, None) for kind, cli, cli_args in probes(fx)]
        if args.families in ("all", "more"):
            listing += more_probes(fx)
        if args.families in ("all", "third"):
            listing += third_probes(fx)
        if args.families in ("all", "fourth"):
            listing += fourth_probes(fx)
        try:
            for kind, cli, cli_args, expect in listing:
                if only and cli not in only:
                    continue
                before = snapshot(work)
                inputs = tree_hash(work / "fixtures")
                cmd = [sys.executable, "-c", LAUNCHER, module_of(cli), *cli_args]
                started = time.time()
                try:
                    res = subprocess.run(cmd, cwd=work, env=env, capture_output=True, text=True, timeout=args.timeout,
                                         stdin=subprocess.DEVNULL)
                    output = res.stdout + res.stderr
                    ok, why = judge(res.returncode, output) if expect is None else judge_expected(res.returncode, output, expect)
                    if ok and expect is not None and expect.rc == 2 and expect.one_line:  # a refusal: one line too
                        one, how = judge(res.returncode, output)
                        ok, why = (True, why) if one else (False, how)
                    text = output.strip().splitlines()
                except subprocess.TimeoutExpired:
                    ok, why, text = False, f"hang > {args.timeout:g} s", []
                seconds = time.time() - started
                created = sorted(snapshot(work) - before)
                allowed = {f"work/{expect.creates}"} if expect is not None and expect.creates else set()
                if set(created) - allowed:
                    ok, why = False, f"created {sorted(set(created) - allowed)[:3]}"
                for c in created:
                    p = work.parent / c
                    shutil.rmtree(p, ignore_errors=True) if p.is_dir() else p.unlink(missing_ok=True)
                if tree_hash(work / "fixtures") != inputs:
                    ok, why, inputs_unchanged = False, "changed an input", False
                row = by_kind.setdefault(f"{cli}: {kind}", [0, 0])
                row[0] += 1
                row[1] += int(ok)
                observed = (text or [""])[-1][:300]
                records.append({"command": f"python -m {module_of(cli)} " + " ".join(cli_args)[-300:],
                                "expected": "refused: exit 2, one line, nothing written" if expect is None else expect.text,
                                "observed": f"{why}: {observed}", "ok": ok, "seconds": round(seconds, 2)})
                if not ok:
                    failed.append({"cli": cli, "kind": kind, "args": cli_args, "why": why, "tail": text[-3:]})
                if args.verbose or not ok:
                    print(f"{'ok  ' if ok else 'FAIL'} {cli} {kind}: {' '.join(cli_args)[-90:]}\n      -> {why}: "
                          f"{(text or [''])[-1][:200]}", flush=True)
        finally:
            Path(fx["ro"]).chmod(0o755)
    tried = sum(v[0] for v in by_kind.values())
    clean = sum(v[1] for v in by_kind.values())
    load_after = os.getloadavg() if hasattr(os, "getloadavg") else None
    print(json.dumps({"tried": tried, "clean": clean, "seconds": round(time.time() - t0, 1),
                      "inputs_unchanged": inputs_unchanged,
                      "load_average": {"before": load_before and [round(x, 2) for x in load_before],
                                       "after": load_after and [round(x, 2) for x in load_after]},
                      "by_kind": {k: {"tried": v[0], "clean": v[1]} for k, v in by_kind.items()}, "failed": failed,
                      "probes": records}))
    return 0 if clean == tried and inputs_unchanged else 1


if __name__ == "__main__":
    sys.exit(main())
