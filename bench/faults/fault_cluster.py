"""Faults on a real two-node Ray cluster on loopback (token auth on): a node, a learner or the driver lost mid-run.

    python bench/faults/fault_cluster.py [--scenarios node_stop,raylet_kill,learner_kill,driver_kill,late_node]
                                  [--out-dir bench_out/fault_cluster] [--env-steps 6144] [--timeout 420]

Each scenario is one unit (`--out-dir/units/<scenario>.json`; a rerun skips finished units): a fresh
cluster (`ray start --head` + `ray start --address 127.0.0.2:PORT`, as `cluster/multinode_check.py`
starts it and with its `RayNode`), the flagship config shrunk (512 env steps per iteration, a checkpoint
every iteration, league snapshots every iteration, PLR with a 16-level buffer; `FLAGSHIP_SETS`) submitted
with `ray job submit -- python -m spade_rllib.train --address auto ...` and one fault injected once the
trial has written `--fault-after` checkpoints:

* `node_stop`: the worker node stopped (`ray stop` of its processes). The head has one CPU held by a
  blocker actor while the trial's placement group is made (so one env runner lands on the worker); the
  blocker is killed before the fault, so the lost runner's bundle can be rescheduled on the head.
* `raylet_kill`: the same, but SIGKILL of the worker's raylet only.
* `learner_kill`: two remote learners (0.5 CPU each, one env runner); one learner process SIGKILLed
  mid-run: the trial fails and Tune retries it from its last checkpoint (`training.max_failures`).
* `driver_kill`: the job's driver (`python -m spade_rllib.train`) SIGKILLed; a second job
  `train --resume <experiment>` continues the run.
* `late_node`: the worker node stopped with no room on the head: its runner's bundle waits; a new node
  joins late and the runner is recreated on it.

Checks of each unit: the final job succeeded and the run reached `--env-steps`; per trial, iterations and
env steps never go backwards except to a checkpoint, where the first result after it is exactly one
iteration on from that checkpoint; where the trial went back to a checkpoint, that checkpoint restored
into a fresh `SpadePPO` equals its files bit for bit (league members and weights, ratings, payoff,
matchmaking RNG, PLR buffer, main's weights: `fault_kill_resume`'s comparison); the env steps lost
(reached minus the checkpoint's) and the seconds from the fault to the first result after it; the
runners' nodes before and after; no actor of the run alive and no placement group left (state API)
once the job ended. Ends with one JSON line: {"bench": "fault_cluster", "scenarios": {name: {...}}, ...}.
"""
from __future__ import annotations

import argparse
import json
import os
import pickle
import secrets
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from cluster.multinode_check import (  # noqa: E402 - the two-node cluster of the multinode check
    RayNode, _psutil, actors_of, alive_nodes, can_bind, free_ports, http_get, merge_actors, ray_executable)
from cluster.multinode_check import _metric as metric  # noqa: E402 - a result row's "a/b" metric, flat or nested

SCENARIOS = ("node_stop", "raylet_kill", "learner_kill", "driver_kill", "late_node")
FLAGSHIP = ROOT / "tune_configs" / "flagship.yaml"
NAME = "fault"
FLAGSHIP_SETS = (
    f"experiment.name={NAME}", "training.num_env_runners=2", "training.num_envs_per_runner=2",
    "agent.train_batch_size=512", "agent.minibatch_size=256", "agent.epochs=1", "training.checkpoint_every=1",
    "training.checkpoint_keep=100", "training.max_failures=2", "league.every_n_iterations=1",
    "league.min_iterations_between=1", "league.win_rate_threshold=null", "curriculum.plr.capacity=16",
    "evaluation.interval=0",
)
"""The flagship config shrunk: 512 env steps per iteration, a checkpoint every iteration, 2 retries."""
LEARNER_SETS = ("training.num_env_runners=1", "resources.num_learners=2", "resources.num_cpus_per_learner=0.5",
                "curriculum.plr.score=learnability")
"""`learner_kill`: two remote learners (positive value loss needs the local learner)."""
RUN_CLASSES = ("SpadePPO", "SpadeEnvRunner")
LIFETIME = "env_runners/num_env_steps_sampled_lifetime"


def log(msg: str) -> None:
    print(f"[fault_cluster {time.strftime('%H:%M:%S')}] {msg}", flush=True)


def rows_of(trial: Path) -> list[dict]:
    out = []
    path = trial / "result.json"
    if not path.is_file():
        return out
    for line in path.read_text(errors="replace").splitlines():
        try:
            row = json.loads(line)
        except ValueError:
            continue
        if isinstance(row, dict) and "training_iteration" in row:
            out.append(row)
    return out


def rows_from_log(trial: Path) -> list[dict]:
    """Results of a trial whose `result.json` never reached the storage (a killed driver writes it through
    Tune's sync), from the `iterations.log` the console writes straight into the trial dir."""
    from spade_rllib.rllib.recovery import ITERATION_LINE

    out = []
    path = trial / "iterations.log"
    if path.is_file():
        for line in path.read_text(errors="replace").splitlines():
            m = ITERATION_LINE.match(line)
            if m:
                it = int(line.split("|")[0].split()[1])
                out.append({"training_iteration": it, "iterations_since_restore": it, "timestamp": 0,
                            "trial_id": trial.name, "env_runners": {"num_env_steps_sampled_lifetime": int(m.group(1).replace(",", ""))}})
    return out


def trials_of(storage: Path) -> list[Path]:
    return sorted(p for p in (storage / NAME).glob(f"{NAME}_*") if p.is_dir())


def checkpoints_of(storage: Path) -> list[Path]:
    return sorted(c for t in trials_of(storage) for c in t.glob("checkpoint_*")
                  if (c / "rllib_checkpoint.json").is_file() and (c / "algorithm_state.pkl").is_file())


def checkpoint_iteration(ckpt: Path) -> int:
    """The training iteration a checkpoint holds (Tune's metadata in the checkpoint, else RLlib's state)."""
    try:
        meta = json.loads((ckpt / "rllib_checkpoint.json").read_text())
        if meta.get("training_iteration"):
            return int(meta["training_iteration"])
    except (OSError, ValueError):
        pass
    with open(ckpt / "algorithm_state.pkl", "rb") as f:
        state = pickle.load(f)
    return int(state.get("training_iteration", 0) or state.get("iteration", 0) or 0)


def history_checks(rows: list[dict], checkpoint_its: dict[int, Path]) -> dict:
    """Iterations and env steps never go backwards, except to a checkpoint: the first row after a setback
    (a row that went back, or the first after a restore: `iterations_since_restore` 1) is one iteration
    past a checkpoint's. Returns the setbacks (a restore from the newest checkpoint loses 0 env steps) and
    whether the history holds."""
    setbacks, ok, peak_it, peak_steps = [], True, 0, 0
    for prev, row in zip([None, *rows], rows):
        it, steps = int(row["training_iteration"]), int(metric(row, LIFETIME) or 0)
        restored = int(row.get("iterations_since_restore") or it) == 1 and it > 1  # Tune retry or --resume
        if restored or (prev is not None and (it <= peak_it or steps <= peak_steps)):
            restored_it = it - 1
            this = int(metric(row, "env_runners/num_env_steps_sampled") or 0)
            setbacks.append({"from_iteration": peak_it, "to_checkpoint_iteration": restored_it,
                             "reached_env_steps": max(peak_steps, steps - this), "checkpoint_env_steps": steps - this,
                             "env_steps_lost": max(0, peak_steps - (steps - this)), "after_s": row.get("timestamp")})
            ok = ok and restored_it in checkpoint_its
            peak_it, peak_steps = it, steps  # the run goes on from the checkpoint
            continue
        peak_it, peak_steps = max(peak_it, it), max(peak_steps, steps)
    return {"setbacks": setbacks, "never_backwards_but_to_a_checkpoint": ok}


def restore_equal(ckpt: Path, raw_sets: list[str]) -> dict:
    """`fault_kill_resume`'s comparison: the checkpoint restored into a fresh SpadePPO (local Ray) equals
    its files bit for bit, twice."""
    code = f"""
import json, sys
sys.path.insert(0, {str(ROOT)!r})
from pathlib import Path
import ray
from bench.faults.fault_kill_resume import expected_state, restored_state
from spade_rllib.config.run_config import load_config
from spade_rllib.testing import assert_exactly_equal
cfg = load_config({str(FLAGSHIP)!r}, {raw_sets!r})
ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
ckpt = Path({str(ckpt)!r})
want_c, want_m = expected_state(ckpt)
got_c, got_m = restored_state(cfg, ckpt)
again_c, _ = restored_state(cfg, ckpt)
ray.shutdown()
out = {{}}
for name, a, b in (("components", want_c, got_c), ("main_weights", want_m, got_m), ("two_restores", got_c, again_c)):
    try:
        assert_exactly_equal(a, b, name); out[name] = True
    except AssertionError as e:
        out[name] = False; out[name + "_diff"] = str(e)[:300]
league = want_c.get("league", {{}}).get("league", {{}})
out["league_members"] = [m.get("id") for m in league.get("members", [])]
out["curriculum_keys"] = sorted(want_c.get("curriculum", {{}}))
print("RESTORE " + json.dumps(out))
"""
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAY_")}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=600)
    for line in r.stdout.splitlines():
        if line.startswith("RESTORE "):
            return json.loads(line[len("RESTORE "):])
    return {"error": (r.stdout + r.stderr)[-1500:]}


def placement_groups(dashboard: str, token: str) -> list[dict]:
    status, body = http_get(f"{dashboard}/api/v0/placement_groups?detail=1&limit=10000", token)
    if status != 200:
        return []
    try:
        return json.loads(body)["data"]["result"]["result"]
    except (ValueError, KeyError, TypeError):
        return []


class Cluster:
    """Head + worker on loopback with token auth (the multinode check's `RayNode`s); `add_node` for late ones."""

    def __init__(self, work: Path, head_cpus: int, worker_cpus: int):
        self.work = work
        self.head_ip, self.worker_ip = ("127.0.0.2", "127.0.0.3") if can_bind("127.0.0.2") else ("127.0.0.1",) * 2
        self.token = secrets.token_hex(32)
        token_path = work / "auth_token"
        token_path.write_text(self.token)
        token_path.chmod(0o600)
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("RAY_")}
        self.env.update(RAY_AUTH_MODE="token", RAY_AUTH_TOKEN_PATH=str(token_path), RAY_USAGE_STATS_ENABLED="0",
                        PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
                        PYTHONPATH=os.pathsep.join([str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]))
        gcs, dash, client, agent_h, agent_w, agent_l = free_ports(6)
        self.gcs = f"{self.head_ip}:{gcs}"
        self.dashboard = f"http://127.0.0.1:{dash}"
        common = ["--num-gpus=0", "--object-store-memory=100000000", "--disable-usage-stats"]
        self.head = RayNode("head", ["--head", f"--node-ip-address={self.head_ip}", f"--port={gcs}",
                                     "--dashboard-host=127.0.0.1", f"--dashboard-port={dash}",
                                     f"--ray-client-server-port={client}", f"--dashboard-agent-listen-port={agent_h}",
                                     '--resources={"spade_head": 1}', f"--num-cpus={head_cpus}", *common],
                            work / "h", self.env, work / "head.log")
        self.worker = self._node("worker", worker_cpus, agent_w)
        self.late_port = agent_l
        self.nodes = [self.head, self.worker]

    def _node(self, name: str, cpus: int, agent_port: int) -> RayNode:
        return RayNode(name, [f"--address={self.gcs}", f"--node-ip-address={self.worker_ip}",
                              f"--dashboard-agent-listen-port={agent_port}", f"--num-cpus={cpus}",
                              "--num-gpus=0", "--object-store-memory=100000000", "--disable-usage-stats"],
                       self.work / name[0] / name, self.env, self.work / f"{name}.log")

    def start(self) -> None:
        self.head.start()
        self.worker.start()
        self.wait_nodes(2)

    def wait_nodes(self, n: int, timeout: float = 90) -> list[dict]:
        deadline = time.time() + timeout
        while time.time() < deadline:
            nodes = alive_nodes(self.dashboard, self.token)
            if len(nodes) >= n:
                return nodes
            time.sleep(1)
        raise RuntimeError(f"expected {n} alive nodes")

    def add_node(self, cpus: int) -> RayNode:
        node = self._node("late", cpus, self.late_port)
        node.start()
        self.nodes.append(node)
        return node

    def node_ids(self) -> dict[str, str]:
        return {n["node_id"]: ("head" if n["is_head_node"] else n["node_ip"]) for n in alive_nodes(self.dashboard, self.token)}

    def submit(self, entrypoint: list[str], log_path: Path) -> subprocess.Popen:
        sid = f"spade-fault-{secrets.token_hex(4)}"
        cmd = [ray_executable(), "job", "submit", f"--address={self.dashboard}", f"--submission-id={sid}", "--", *entrypoint]
        log(f"submit: {shlex.join(cmd)[:300]}")
        out = open(log_path, "ab")
        proc = subprocess.Popen(cmd, env=self.env, stdout=out, stderr=subprocess.STDOUT)
        proc.sid, proc.log = sid, log_path  # type: ignore[attr-defined]
        return proc

    def stop(self) -> None:
        for node in reversed(self.nodes):
            node.stop()


def blocker_script(cluster: Cluster, hold: Path) -> list[str]:
    """A driver that holds one head CPU (a detached-free actor pinned with `spade_head`) until `hold` is removed."""
    code = f"""
import os, time, ray
ray.init(address={cluster.gcs!r}, log_to_driver=False)
@ray.remote(num_cpus=1, resources={{"spade_head": 0.5}})
class Blocker:
    def ready(self): return True
b = Blocker.remote(); ray.get(b.ready.remote())
open({str(hold)!r} + ".up", "w").close()
while os.path.exists({str(hold)!r}): time.sleep(0.5)
ray.kill(b); ray.shutdown()
"""
    return [sys.executable, "-c", code]


def runner_nodes(cluster: Cluster, seen: dict) -> dict[str, list[str]]:
    merge_actors(seen, actors_of(cluster.dashboard, cluster.token, RUN_CLASSES))
    out: dict[str, list[str]] = {}
    for a in seen.values():
        if a.get("class_name") == "SpadeEnvRunner" and a.get("node_id"):
            out.setdefault(a["state"], []).append(a["node_id"][:8])
    return out


def learner_pids(cluster: Cluster) -> list[int]:
    status, body = http_get(f"{cluster.dashboard}/api/v0/actors?detail=1&limit=10000", cluster.token)
    if status != 200:
        return []
    rows = json.loads(body)["data"]["result"]["result"]
    # Remote learners are Ray Train workers (LearnerGroup's BackendExecutor): the learner class wrapped as
    # `_WrappedExecutable` (ray.train._internal.worker_group.create_executable_class).
    learner = ("Learner", "RayTrainWorker", "_WrappedExecutable")
    return [int(r["pid"]) for r in rows if any(k in str(r.get("class_name")) for k in learner)
            and r.get("state") == "ALIVE" and r.get("pid")]


def driver_pids(storage: Path) -> list[int]:
    psutil = _psutil()
    out = []
    for p in psutil.process_iter(["pid", "cmdline"]):
        cmd = " ".join(p.info["cmdline"] or [])
        if "spade_rllib.train" in cmd and str(storage) in cmd and "ray job submit" not in cmd and "job" not in cmd.split()[:3]:
            out.append(p.pid)
    return out


def wait_job(proc: subprocess.Popen, timeout: float) -> int:
    try:
        return proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.terminate()
        proc.wait(timeout=30)
        return 124


def run_scenario(name: str, args: argparse.Namespace, work: Path) -> dict:
    learner = name == "learner_kill"
    head_cpus = {"node_stop": 3, "raylet_kill": 3, "late_node": 2, "learner_kill": 3, "driver_kill": 2}[name]
    storage = work / "storage"
    storage.mkdir(parents=True)
    sets = [*FLAGSHIP_SETS, f"experiment.storage_path={storage}", f"training.stop.env_steps={args.env_steps}",
            "training.stop.time_s=null", *(LEARNER_SETS if learner else ())]
    entry = ["python", "-m", "spade_rllib.train", "--config", str(FLAGSHIP), "--address", "auto",
             *[x for s in sets for x in ("--set", s)], "--final-eval-games", "0", "--final-replays", "0"]
    out: dict = {"scenario": name, "env_steps_budget": args.env_steps, "checks": {}}
    cluster = Cluster(work, head_cpus, 1)
    seen: dict = {}
    hold = work / "blocker"
    blocker = None
    before_resume: dict = {}
    t0 = time.time()
    try:
        cluster.start()
        out["nodes"] = cluster.node_ids()
        if name in ("node_stop", "raylet_kill"):  # the head's spare CPU is taken while the trial is placed
            hold.write_text("hold")
            blocker = subprocess.Popen(blocker_script(cluster, hold), env=cluster.env, stdout=subprocess.DEVNULL,
                                       stderr=subprocess.DEVNULL)
            while not Path(str(hold) + ".up").exists() and time.time() - t0 < 120:
                time.sleep(0.5)
        job = cluster.submit(entry, work / "job.log")
        polled = 0.0
        while len(checkpoints_of(storage)) < args.fault_after:
            if blocker is not None and hold.exists() and checkpoints_of(storage):
                hold.unlink()  # the trial is placed: free the head's spare CPU for the lost runner's bundle
            if time.time() - polled > 5:  # the state API is slow on a loaded machine: not every turn
                runner_nodes(cluster, seen)
                polled = time.time()
            if job.poll() is not None or time.time() - t0 > args.timeout:
                raise RuntimeError(f"the job ended or stalled before {args.fault_after} checkpoints (rc {job.poll()})")
            time.sleep(0.3)
        if blocker is not None:
            hold.unlink(missing_ok=True)
            blocker.wait(timeout=60)
        out["runners_before"] = runner_nodes(cluster, seen)
        before = {aid: a.get("node_id") for aid, a in seen.items()
                  if a.get("class_name") == "SpadeEnvRunner" and a.get("state") == "ALIVE"}
        worker_id = next((nid for nid, what in out["nodes"].items() if what != "head"), None)
        fault_at = time.time()
        out["fault_at_checkpoints"] = len(checkpoints_of(storage))
        if name in ("node_stop", "late_node"):
            out["fault"] = {"worker_stopped": cluster.worker.stop()}
        elif name == "raylet_kill":
            psutil = _psutil()
            raylets = [p for p in cluster.worker.processes() if p.name() == "raylet"]
            for p in raylets:
                p.send_signal(signal.SIGKILL)
            out["fault"] = {"raylets_killed": len(raylets)}
            psutil.wait_procs(raylets, timeout=10)
        elif learner:
            pids = learner_pids(cluster)
            if pids:
                os.kill(pids[0], signal.SIGKILL)
            out["fault"] = {"learners_alive": len(pids), "killed_pid": pids[0] if pids else None}
        elif name == "driver_kill":
            pids = driver_pids(storage)
            for pid in pids:
                os.kill(pid, signal.SIGKILL)
            out["fault"] = {"drivers_killed": len(pids)}
            out["first_job_rc"] = wait_job(job, 120)
            # the killed run's results: result.json reaches the storage through the driver's sync (partly, or
            # not at all), iterations.log is written straight into the trial dir: the longer one
            before_resume = {str(t): max(rows_of(t), rows_from_log(t), key=len) for t in trials_of(storage)}
            job = cluster.submit(["python", "-m", "spade_rllib.train", "--resume", str(storage / NAME), "--address", "auto",
                                  "--final-eval-games", "0", "--final-replays", "0"], work / "job_resume.log")
        if name == "late_node":
            time.sleep(10)  # the lost runner's bundle waits: no room on the head
            out["runners_while_waiting"] = runner_nodes(cluster, seen)
            cluster.add_node(1)
            out["late_node_joined_after_s"] = round(time.time() - fault_at, 1)
        recreated: dict[str, str] = {}  # runner actor id -> the live node it runs on after the fault
        while job.poll() is None and time.time() - t0 < args.timeout:
            for a in actors_of(cluster.dashboard, cluster.token, ("SpadeEnvRunner",)):
                was = before.get(a["actor_id"], worker_id)  # a new actor counts as the lost runner's successor
                if a.get("state") == "ALIVE" and a.get("node_id") and was == worker_id and a["node_id"] != worker_id:
                    recreated.setdefault(a["actor_id"], a["node_id"])
                    out.setdefault("runner_recreated_after_s", round(time.time() - fault_at, 1))
            time.sleep(2)
        out["runners_recreated"] = {aid[:8]: nid[:8] for aid, nid in recreated.items()}
        rc = wait_job(job, 5) if job.poll() is None else job.returncode
        out["job_rc"] = rc
        out["runners_after"] = runner_nodes(cluster, seen)
        out["alive_nodes_after"] = cluster.node_ids()
        time.sleep(3)
        alive = [a for a in actors_of(cluster.dashboard, cluster.token, RUN_CLASSES) if a.get("state") == "ALIVE"]
        pgs = [g for g in placement_groups(cluster.dashboard, cluster.token) if g.get("state") != "REMOVED"]
        out["orphans"] = {"actors_alive": len(alive), "placement_groups_left": len(pgs)}
        out["checks"]["no_orphans"] = not alive and not pgs
        out["checks"]["job_succeeded"] = rc == 0
        log_text = (work / ("job_resume.log" if name == "driver_kill" else "job.log")).read_text(errors="replace")
        out["summary_lines"] = [ln for ln in log_text.splitlines() if ln.startswith(("recovered:", "trial retries:", "done:"))][:6]
        trials = trials_of(storage)
        rows = [r for t in trials for r in rows_of(t)]
        if name == "driver_kill":  # a trial dir the resumed run no longer shows keeps the killed run's rows
            seen_rows = {(r.get("trial_id"), r["training_iteration"], r.get("timestamp")) for r in rows}
            rows += [r for t in before_resume.values() for r in t
                     if (r.get("trial_id"), r["training_iteration"], r.get("timestamp")) not in seen_rows]
            out["trials"] = {Path(t).name: len(v) for t, v in before_resume.items()} | {
                t.name: len(rows_of(t)) for t in trials}
        rows.sort(key=lambda r: r.get("timestamp", 0))
        ckpts = {checkpoint_iteration(c): c for c in checkpoints_of(storage)}
        last = int(metric(rows[-1], LIFETIME) or 0) if rows else 0
        out["env_steps_reached"], out["iterations"] = last, int(rows[-1]["training_iteration"]) if rows else 0
        out["checks"]["budget_reached"] = last >= args.env_steps
        out["history"] = [[int(r["training_iteration"]), int(r.get("iterations_since_restore") or 0),
                           int(metric(r, LIFETIME) or 0), round(float(r.get("timestamp", 0)) - fault_at, 1)] for r in rows]
        hist = history_checks(rows, ckpts)
        out.update(hist)
        out["checks"]["never_backwards_but_to_a_checkpoint"] = hist["never_backwards_but_to_a_checkpoint"]
        after = [r for r in rows if r.get("timestamp", 0) >= fault_at]
        out["seconds_to_first_result_after_fault"] = round(after[0]["timestamp"] - fault_at, 1) if after else None
        out["env_steps_lost"] = sum(s["env_steps_lost"] for s in hist["setbacks"])
        if hist["setbacks"] and hist["setbacks"][-1]["after_s"]:  # a retry or a resume: its first result
            out["seconds_to_first_result_after_restore"] = round(hist["setbacks"][-1]["after_s"] - fault_at, 1)
        if name in ("learner_kill", "driver_kill"):
            out["checks"]["went_back_to_a_checkpoint"] = bool(hist["setbacks"])
        if hist["setbacks"]:
            ckpt = ckpts.get(hist["setbacks"][-1]["to_checkpoint_iteration"])
            out["restored_checkpoint"] = str(ckpt.relative_to(storage)) if ckpt else None
            if ckpt is not None:
                cmp = restore_equal(ckpt, sets)
                out["restore"] = cmp
                out["checks"]["state_equal_after_restore"] = all(cmp.get(k) for k in ("components", "main_weights", "two_restores"))
        if name in ("node_stop", "raylet_kill", "late_node"):
            out["checks"]["a_runner_was_on_the_lost_node"] = worker_id in before.values()
            out["checks"]["runner_recreated_on_a_live_node"] = bool(recreated)
    except Exception as e:
        out["error"] = f"{type(e).__name__}: {e}"
        log(out["error"])
    finally:
        if blocker is not None and blocker.poll() is None:
            hold.unlink(missing_ok=True)
            try:
                blocker.wait(timeout=30)
            except subprocess.TimeoutExpired:
                blocker.kill()
        cluster.stop()
        left = [p.pid for n in cluster.nodes for p in n.processes() if p.is_running() and p.status() != "zombie"]
        out["checks"]["nodes_stopped"] = not left
    out["seconds"] = round(time.time() - t0, 1)
    out["recovered"] = "error" not in out and all(out["checks"].values())
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--scenarios", default=",".join(SCENARIOS), help=f"comma list of {', '.join(SCENARIOS)}")
    ap.add_argument("--out-dir", type=Path, default=Path("bench_out") / "fault_cluster")
    ap.add_argument("--env-steps", type=int, default=32768, help="the run's env-step budget (64 iterations of 512)")
    ap.add_argument("--fault-after", type=int, default=3, help="inject the fault once this many checkpoints exist")
    ap.add_argument("--timeout", type=float, default=480.0, help="seconds per scenario")
    ap.add_argument("--redo", action="store_true", help="run finished units again")
    ap.add_argument("--keep", action="store_true", help="keep each unit's work folder (logs, storage) and name it in the unit")
    args = ap.parse_args(argv)
    from bench.common import check_bench_args, read_json, refuse

    check_bench_args(args)
    chosen = [s.strip() for s in args.scenarios.split(",") if s.strip()]
    bad = [s for s in chosen if s not in SCENARIOS]
    if bad or not chosen:
        refuse(f"--scenarios {args.scenarios!r}: unknown {bad or 'empty'}; allowed {', '.join(SCENARIOS)}")
    if args.fault_after < 1 or not args.timeout > 0:
        refuse(f"--fault-after {args.fault_after} (>= 1) / --timeout {args.timeout} (> 0)")
    units = args.out_dir / "units"
    results = {}
    load = os.getloadavg()
    for name in chosen:
        path = units / f"{name}.json"
        if path.is_file() and not args.redo:
            results[name] = read_json(path)
            log(f"{name}: cached ({'recovered' if results[name].get('recovered') else 'NOT recovered'})")
            continue
        tmp = Path(tempfile.mkdtemp(prefix=f"spfault-{name}-", dir="/tmp"))
        log(f"{name}: start")
        res = run_scenario(name, args, tmp)
        if args.keep:
            res["workdir"] = str(tmp)
        else:
            shutil.rmtree(tmp, ignore_errors=True)
        res["load_average_after"] = [round(x, 2) for x in os.getloadavg()]
        units.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(res, indent=1))
        results[name] = res
        log(f"{name}: {'recovered' if res['recovered'] else 'NOT recovered'} in {res['seconds']} s; "
            f"failed checks {[k for k, v in res['checks'].items() if not v]} {res.get('error', '')}")
    short = {n: {"recovered": r.get("recovered"), "env_steps_lost": r.get("env_steps_lost"),
                 "seconds_to_recover": r.get("seconds_to_first_result_after_restore",
                                             r.get("seconds_to_first_result_after_fault")),
                 "env_steps_reached": r.get("env_steps_reached"), "failed": [k for k, v in r.get("checks", {}).items() if not v],
                 "error": r.get("error")} for n, r in results.items()}
    print(json.dumps({"bench": "fault_cluster", "env_steps_budget": args.env_steps, "scenarios": short,
                      "all_recovered": all(v["recovered"] for v in short.values()),
                      "load_average_before": [round(x, 2) for x in load]}))
    return 0 if all(v["recovered"] for v in short.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
