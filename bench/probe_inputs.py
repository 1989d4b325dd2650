"""Bad inputs on every command line: each must end with one line and exit 2, create nothing, never hang.

    python bench/probe_inputs.py [--only train,export] [--timeout 120] [--verbose]

Each probe runs `python -m spade_rllib.<cli> ...` (through a launcher that makes `ray.init` exit 99,
so a probe that is not refused never starts a cluster) as a subprocess in a scratch working directory
(with a tiny checkpoint, a truncated copy, a copy with a symlink leading out, bad maps, a regular
file and a read-only directory to aim at). A probe is *clean* when it exits 2 within the timeout, its
output (stdout + stderr, blank lines and `note:` lines aside) is one line without a traceback
(argparse's own usage lines + `error:` line count as one message), and no file appeared in the scratch
directory. Ends with one JSON line: {"tried": N, "clean": M, "by_kind": {...}, "failed": [...]}.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
QUICKSTART = str(ROOT / "tune_configs" / "quickstart.yaml")
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
"""Runs a CLI like `python -m` but never starts Ray: reaching `ray.init` exits 99 (a failed probe)."""


def make_fixtures(work: Path) -> dict:
    """Files the probes point at; returns their paths by name."""
    sys.path.insert(0, str(ROOT / "tests"))
    from tiny_checkpoints import save_tiny_checkpoint  # noqa: PLC0415

    fx = work / "fixtures"
    fx.mkdir()
    good = save_tiny_checkpoint(fx / "trial", snapshots=1)
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
        "stop: {time_s: 170}", "stop: {}"))
    heldout_dir = fx / "heldout_bad"
    heldout_dir.mkdir()
    (heldout_dir / "bad.txt").write_text("#####\n#A.B#\n#####\n")
    empty_dir = fx / "no_maps"
    empty_dir.mkdir()
    return {"good": str(fx / "trial"), "cut": str(cut), "escape": str(escape), "afile": str(fx / "afile"),
            "ro": str(ro), "no_flag": str(fx / "no_flag.txt"), "binary": str(fx / "binary.txt"),
            "three": str(fx / "three_v_three.txt"), "empty": str(fx / "empty.yaml"), "junk": str(fx / "junk.yaml"),
            "list": str(fx / "list.yaml"), "stop_empty": str(fx / "stop_empty.yaml"),
            "heldout_bad": str(heldout_dir), "no_maps": str(empty_dir)}


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
    return {str(p.relative_to(work)) for p in work.rglob("*") if "fixtures" not in p.relative_to(work).parts[:1]}


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


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--only", default="", help="comma-separated CLIs to probe (default: all)")
    ap.add_argument("--timeout", type=float, default=120.0, help="seconds before a probe counts as a hang")
    ap.add_argument("--verbose", action="store_true", help="print every probe's output line")
    args = ap.parse_args(argv)
    only = {c for c in args.only.split(",") if c}
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
           "SPADE_DEBUG": "0"}
    by_kind: dict[str, list[int]] = {}
    failed = []
    t0 = time.time()
    with tempfile.TemporaryDirectory(prefix="spade_probe_") as tmp:
        work = Path(tmp)
        fx = make_fixtures(work)
        try:
            for kind, cli, cli_args in probes(fx):
                if only and cli not in only:
                    continue
                before = snapshot(work)
                cmd = [sys.executable, "-c", LAUNCHER, f"spade_rllib.{cli}", *cli_args]
                try:
                    res = subprocess.run(cmd, cwd=work, env=env, capture_output=True, text=True, timeout=args.timeout,
                                         stdin=subprocess.DEVNULL)
                    ok, why = judge(res.returncode, res.stdout + res.stderr)
                    text = (res.stdout + res.stderr).strip().splitlines()
                except subprocess.TimeoutExpired:
                    ok, why, text = False, f"hang > {args.timeout:g} s", []
                created = sorted(snapshot(work) - before)
                if created:
                    ok, why = False, f"created {created[:3]}"
                    for c in created:
                        p = work / c
                        shutil.rmtree(p, ignore_errors=True) if p.is_dir() else p.unlink(missing_ok=True)
                row = by_kind.setdefault(f"{cli}: {kind}", [0, 0])
                row[0] += 1
                row[1] += int(ok)
                if not ok:
                    failed.append({"cli": cli, "kind": kind, "args": cli_args, "why": why, "tail": text[-3:]})
                if args.verbose or not ok:
                    print(f"{'ok  ' if ok else 'FAIL'} {cli} {kind}: {' '.join(cli_args)[-90:]}\n      -> {why}: "
                          f"{(text or [''])[-1][:200]}", flush=True)
        finally:
            Path(fx["ro"]).chmod(0o755)
    tried = sum(v[0] for v in by_kind.values())
    clean = sum(v[1] for v in by_kind.values())
    print(json.dumps({"tried": tried, "clean": clean, "seconds": round(time.time() - t0, 1),
                      "by_kind": {k: {"tried": v[0], "clean": v[1]} for k, v in by_kind.items()}, "failed": failed}))
    return 0 if clean == tried else 1


if __name__ == "__main__":
    sys.exit(main())
