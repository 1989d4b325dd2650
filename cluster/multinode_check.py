#!/usr/bin/env python
"""Real multi-node check on one machine, with Ray token authentication on.

1. Makes a fresh auth token (a private file; `~/.ray/auth_token` is not touched).
2. Starts a Ray head (`ray start --head`) and a second Ray node (`ray start --address ...`) as
   separate node processes, each with its own CPU, temp dir, ports and loopback IP
   (127.0.0.2 and 127.0.0.3 by default, so nothing listens or connects beyond loopback and Tune's
   automatic `node_ip` result field tells the nodes apart). The dashboard binds to 127.0.0.1.
3. Checks that the cluster refuses clients without the token (GCS and HTTP job API).
4. Submits the job with `ray job submit --address http://127.0.0.1:<dashboard port> -- <entrypoint>`.
5. Asserts the job succeeded and that its Tune trials ran on both nodes: the trials'
   `result.json` files under the job's storage hold `node_id` (when the job records it) and
   `node_ip` (Tune adds it to every result).
6. Reads the dashboard's HTTP API on loopback (`/api/jobs/`) with the token and checks that it
   lists the job as SUCCEEDED.
7. Stops both nodes the way `ray stop` does (raylet, then the other processes, then GCS; SIGTERM,
   then SIGKILL after a grace period), but only the processes these two `ray start` calls
   created: never a global `ray stop`, so other Ray instances on the machine are left alone.

The entrypoint is a template: `{storage}` becomes a fresh storage folder that both nodes see,
`{python}` the interpreter running this script, `{here}` this folder, `{root}` the repository.
Default: the stand-in Tune job `cluster/standin_tune_job.py`. For the real sweep:

    python cluster/multinode_check.py --entrypoint \
        "python -m spade_rllib.tune --sweep lr_gamma --smoke --address auto --storage {storage}"

`--flagship`: the flagship training as users run it (`FLAGSHIP_ENTRYPOINT`):
`ray job submit --working-dir <repo> -- python -m spade_rllib.train --config
tune_configs/flagship.yaml --address auto --set ...`, shrunk to 3 iterations of 512 env steps with
2 env runners, league (a snapshot every iteration, PFSP) and PLR curriculum on, storage in the
work folder (one machine: a folder both nodes see, as NFS would on a real cluster). Each node
then gets 2 CPUs: the trial's placement group (main process + 2 runners, 1 CPU each, RLlib's PACK
strategy) fills one node with the main process and runner 1 and puts runner 2 on the other.
Instead of trials on both nodes it checks:
  * the env runners (`SpadeEnvRunner` actors, read from the dashboard's state API
    `/api/v0/actors` while the job runs and after it) ran on both nodes;
  * the trial's results: the league grew (snapshots), PFSP planned games against a snapshot,
    the PLR curriculum reported its buffer and episodes; a checkpoint was written;
  * after both nodes are stopped, the checkpoint restores on this machine without a cluster:
    `python -m spade_rllib.evaluate --checkpoint <trial dir> --local ...` exits 0 and writes its
    files.

The nodes get this checkout first on PYTHONPATH, so jobs import the code next to this script.

Exit status 0 when every check passed. `--report FILE` writes the findings as JSON.
"""
from __future__ import annotations

import argparse
import glob
import json
import os
import re
import secrets
import shlex
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent  # the repository: `--working-dir` of the flagship job, first on the nodes' PYTHONPATH
STANDIN_ENTRYPOINT = "{python} {here}/standin_tune_job.py --storage {storage}"
SWEEP_ENTRYPOINT = (
    "python -m spade_rllib.tune --sweep lr_gamma --smoke --address auto --storage {storage}"
)
# The flagship recipe shrunk to about a minute on 2 cores: 3 iterations of 512 env steps, 2 env
# runners (one per node), a league snapshot every iteration, PLR with a small buffer. The
# evaluation settings stay the flagship's (every 25 iterations: not reached); the end-of-run
# evaluation is off (`--final-eval-games 0`): the checker plays the checkpoint itself, afterwards.
FLAGSHIP_NAME = "flagship"
FLAGSHIP_SETS = (
    "training.stop.iterations=3", "training.num_env_runners=2", "training.num_envs_per_runner=2",
    "agent.train_batch_size=512", "agent.minibatch_size=256", "agent.epochs=1",
    "league.every_n_iterations=1", "league.min_iterations_between=1", "league.win_rate_threshold=null",
    "curriculum.plr.capacity=16", "experiment.storage_path={storage}",
)
FLAGSHIP_ENTRYPOINT = (
    "python -m spade_rllib.train --config tune_configs/flagship.yaml --address auto "
    + " ".join(f"--set {s}" for s in FLAGSHIP_SETS)
    + " --final-eval-games 0 --final-replays 0"
)
# The flagship job runs in (a copy of) this checkout, as `ray job submit --working-dir .` from a
# checkout does (`.git` excluded: Ray would upload it); `tune_configs/flagship.yaml` resolves there.
WORKING_DIR_EXCLUDES = [".git"]
RUNNER_CLASS = "SpadeEnvRunner"
TRAINABLE_CLASS = "SpadePPO"
# The single-machine restore: `{trial}` and `{out}` filled in after the nodes are stopped.
EVALUATE_ARGS = ("-m", "spade_rllib.evaluate", "--checkpoint", "{trial}", "--levels", "generated:1@2",
                 "--games-per-pair", "2", "--local", "--no-league", "--bots", "rusher", "--out", "{out}")
EVALUATE_FILES = ("games.csv", "payoff.csv", "ratings.csv", "levels.csv", "report.md", "eval_config.json")

BASE_CHECKS = (
    "two_nodes_alive", "gcs_refuses_missing_token", "http_401_without_token", "http_403_wrong_token",
    "job_submit_rc_0", "api_lists_job", "api_job_succeeded", "nodes_stopped",
)
REQUIRED_CHECKS = (*BASE_CHECKS, "trials_found", "trials_on_head", "trials_on_worker")
FLAGSHIP_CHECKS = (
    *BASE_CHECKS, "trials_found", "runners_found", "runners_on_head", "runners_on_worker", "league_grew",
    "pfsp_planned_snapshot", "curriculum_metrics", "checkpoint_written", "evaluate_rc_0", "evaluate_files",
)


def log(msg: str) -> None:
    print(f"[multinode {time.strftime('%H:%M:%S')}] {msg}", flush=True)


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def free_ports(n: int) -> list[int]:
    ports: set[int] = set()
    while len(ports) < n:
        ports.add(free_port())
    return sorted(ports)


def can_bind(ip: str) -> bool:
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            s.bind((ip, 0))
        return True
    except OSError:
        return False


def _psutil():
    """psutil as Ray ships it (`ray/thirdparty_files`), or an installed one."""
    try:
        import psutil
    except ImportError:
        import ray  # noqa: F401  (puts ray/thirdparty_files on sys.path)
        import psutil
    return psutil


def ray_executable() -> str:
    exe = Path(sys.executable).parent / "ray"
    return str(exe) if exe.exists() else "ray"


# --------------------------------------------------------------------------- node processes


class RayNode:
    """One `ray start` invocation and every process it left behind.

    `ray start` runs in a new session, so the daemons it spawns (GCS, raylet, dashboard, agents,
    and the raylet's workers) keep its process group id; the node's own temp dir in their
    command lines and their parent links catch the rest.
    """

    def __init__(self, name: str, args: list[str], temp_dir: Path, env: dict, log_path: Path):
        self.name, self.args, self.temp_dir, self.env, self.log_path = name, args, temp_dir, env, log_path
        self.pgid: int | None = None

    def start(self, timeout: float = 120) -> None:
        cmd = [ray_executable(), "start", *self.args, f"--temp-dir={self.temp_dir}"]
        log(f"{self.name}: {shlex.join(cmd)}")
        with open(self.log_path, "ab") as out:
            proc = subprocess.Popen(
                cmd, env=self.env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
            )
            self.pgid = proc.pid  # session leader: pid == pgid
            try:
                rc = proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                proc.kill()
                raise RuntimeError(f"{self.name}: `ray start` did not return in {timeout}s") from None
        if rc != 0:
            tail = self.log_path.read_text(errors="replace")[-3000:]
            raise RuntimeError(f"{self.name}: `ray start` failed (exit {rc}):\n{tail}")

    def processes(self):
        psutil = _psutil()
        if self.pgid is None:
            return []
        marker = str(self.temp_dir)
        found: dict[int, psutil.Process] = {}
        for p in psutil.process_iter(["pid", "cmdline"]):
            try:
                if os.getpgid(p.pid) == self.pgid or marker in " ".join(p.info["cmdline"] or []):
                    found[p.pid] = p
            except (psutil.Error, ProcessLookupError, PermissionError):
                continue
        for p in list(found.values()):
            try:
                for c in p.children(recursive=True):
                    found.setdefault(c.pid, c)
            except psutil.Error:
                pass
        # Never this process or its ancestors (their command lines may name the work folder).
        me = psutil.Process()
        for p in [me, *me.parents()]:
            found.pop(p.pid, None)
        return list(found.values())

    def stop(self, grace_s: float = 10.0) -> dict:
        """Stop like `ray stop` (raylet, others, GCS), limited to this node's processes."""
        psutil = _psutil()

        def name_of(p):
            try:
                return p.name()
            except psutil.Error:
                return ""

        procs = self.processes()
        buckets = [
            [p for p in procs if name_of(p) == "raylet"],
            [p for p in procs if name_of(p) not in ("raylet", "gcs_server")],
            [p for p in procs if name_of(p) == "gcs_server"],
        ]
        graceful, forced = 0, 0
        for bucket in buckets:
            for p in bucket:
                try:
                    p.terminate()
                except psutil.Error:
                    pass
            gone, alive = psutil.wait_procs(bucket, timeout=grace_s / len(buckets))
            graceful += len(gone)
            for p in alive:
                try:
                    p.kill()
                    forced += 1
                except psutil.Error:
                    pass
            psutil.wait_procs(alive, timeout=5)
        # Anything the raylet spawned while we were stopping it.
        leftovers = [p for p in self.processes() if p.is_running() and p.status() != "zombie"]
        for p in leftovers:
            try:
                p.kill()
            except psutil.Error:
                pass
        if self.pgid is not None:
            try:
                os.killpg(self.pgid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        result = {"processes": len(procs), "graceful": graceful, "forced": forced + len(leftovers)}
        log(f"{self.name}: stopped {result}")
        return result


# --------------------------------------------------------------------------- HTTP API


def http_get(url: str, token: str | None = None, timeout: float = 15) -> tuple[int, str]:
    req = urllib.request.Request(url)
    if token is not None:
        req.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            return resp.status, resp.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode(errors="replace")


def alive_nodes(dashboard: str, token: str) -> list[dict]:
    status, body = http_get(f"{dashboard}/api/v0/nodes?detail=1", token)
    if status != 200:
        return []
    rows = json.loads(body)["data"]["result"]["result"]
    return [n for n in rows if n.get("state") == "ALIVE"]


# --------------------------------------------------------------------------- results


def trial_placements(storage: Path) -> dict[str, dict]:
    """trial dir -> {"node_id": .., "node_ip": ..} from the trials' result.json files."""
    placements: dict[str, dict] = {}
    for path in glob.glob(str(storage / "**" / "result.json"), recursive=True):
        seen: dict = {}
        for line in Path(path).read_text(errors="replace").splitlines():
            try:
                row = json.loads(line)
            except json.JSONDecodeError:
                continue
            for key in ("node_id", "node_ip"):
                if row.get(key):
                    seen[key] = row[key]
        if seen:
            placements[str(Path(path).parent.relative_to(storage))] = seen
    return placements


def actors_of(dashboard: str, token: str, classes: tuple[str, ...]) -> list[dict]:
    """Actors of these classes, alive or dead, from the dashboard's state API (`ray list actors`)."""
    status, body = http_get(f"{dashboard}/api/v0/actors?detail=1&limit=10000", token)
    if status != 200:
        return []
    try:
        rows = json.loads(body)["data"]["result"]["result"]
    except (ValueError, KeyError, TypeError):
        return []
    return [
        {k: r.get(k) for k in ("actor_id", "class_name", "node_id", "pid", "state")}
        for r in rows if r.get("class_name") in classes
    ]


def merge_actors(seen: dict[str, dict], rows: list[dict]) -> None:
    """Into `seen` (actor id -> row): the newest row of each actor, keeping a node id once known
    (an actor's node id can go missing once it is dead)."""
    for row in rows:
        aid = row.get("actor_id")
        if not aid:
            continue
        old = seen.get(aid, {})
        seen[aid] = {**old, **{k: v for k, v in row.items() if v not in (None, "")}}


def nodes_of(actors: dict[str, dict], class_name: str) -> list[str]:
    """Sorted node ids the actors of `class_name` ran on."""
    return sorted({a["node_id"] for a in actors.values() if a.get("class_name") == class_name and a.get("node_id")})


def _metric(row: dict, key: str):
    """`row[key]` for a flat "a/b" key, else the nested row["a"]["b"]; None when absent."""
    if key in row:
        return row[key]
    node = row
    for part in key.split("/"):
        if not isinstance(node, dict) or part not in node:
            return None
        node = node[part]
    return node


def _num(value) -> float | None:
    try:
        value = float(value)
    except (TypeError, ValueError):
        return None
    return None if value != value else value  # NaN: not reported


def flagship_findings(storage: Path, name: str = FLAGSHIP_NAME) -> dict:
    """What the flagship trial under `storage/name/` recorded: per iteration the league's size and
    snapshots, PFSP's planned share of snapshot opponents and the PLR curriculum's numbers; its
    checkpoints. Empty when there is no trial."""
    trials = sorted(p for p in (storage / name).glob(f"{name}_*") if (p / "result.json").is_file())
    if not trials:
        return {}
    trial = trials[-1]
    rows = []
    for line in (trial / "result.json").read_text(errors="replace").splitlines():
        try:
            row = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(row, dict) and "training_iteration" in row:
            rows.append(row)
    from spade_rllib.artifacts.result_lookup import flatten  # the checkout's package (the check runs from its root)

    iterations = []
    for row in rows:
        flat = flatten(row)
        plan = {k[len("league/plan/"):]: _num(v) for k, v in flat.items() if k.startswith("league/plan/")}
        iterations.append({
            "iteration": int(row["training_iteration"]),
            "node_ip": row.get("node_ip"),
            "league_size": _num(_metric(row, "league/size")),
            "league_snapshots_total": _num(_metric(row, "league/snapshots_total")),
            # Frozen snapshots of a learner are named <learner>_v<N> (main_v1, ...).
            "pfsp_snapshot_share": sum(v or 0.0 for k, v in plan.items() if re.fullmatch(r".+_v\d+", k)),
            "curriculum_buffer_size": _num(_metric(row, "curriculum/buffer_size")),
            "curriculum_episodes": _num(_metric(row, "curriculum/episodes")),
            "curriculum_score_mean": _num(_metric(row, "curriculum/score_mean")),
        })
    checkpoints = sorted(c.name for c in trial.glob("checkpoint_*") if c.is_dir() and any(c.iterdir()))
    return {"trial": str(trial), "iterations": iterations, "checkpoints": checkpoints}


def flagship_checks(found: dict) -> dict[str, bool]:
    """The league grew, PFSP planned a snapshot, the curriculum reported, a checkpoint exists."""
    its = found.get("iterations") or []
    sizes = [i["league_size"] for i in its if i["league_size"] is not None]
    last = its[-1] if its else {}
    return {
        "trials_found": bool(found.get("trial")) and bool(its),
        "league_grew": len(sizes) >= 2 and sizes[-1] > sizes[0] and (last.get("league_snapshots_total") or 0) >= 2,
        "pfsp_planned_snapshot": any(i["pfsp_snapshot_share"] > 0 for i in its),
        "curriculum_metrics": (last.get("curriculum_buffer_size") or 0) > 0 and (last.get("curriculum_episodes") or 0) > 0,
        "checkpoint_written": bool(found.get("checkpoints")),
    }


def evaluate_restore(trial: str, out: Path, env: dict, timeout: float = 300) -> dict:
    """`python -m spade_rllib.evaluate --checkpoint <trial> --local ...` on this machine, no cluster."""
    cmd = [sys.executable, *(a.format(trial=trial, out=out) for a in EVALUATE_ARGS)]
    log(f"evaluate: {shlex.join(cmd)}")
    t0 = time.time()
    try:
        r = subprocess.run(cmd, env=env, cwd=ROOT, capture_output=True, text=True, timeout=timeout)
        rc, text = r.returncode, r.stdout + r.stderr
    except subprocess.TimeoutExpired as e:
        rc, text = 124, f"{e.stdout or ''}{e.stderr or ''}\n(timed out after {timeout}s)"
    files = sorted(f for f in EVALUATE_FILES if (out / f).is_file() and (out / f).stat().st_size > 0)
    games = 0
    if (out / "games.csv").is_file():
        games = max(0, len((out / "games.csv").read_text().strip().splitlines()) - 1)
    result = {"command": shlex.join(cmd), "rc": rc, "seconds": round(time.time() - t0, 1), "files": files,
              "games": games}
    if rc != 0:
        result["tail"] = text[-3000:] if isinstance(text, str) else str(text)[-3000:]
    log(f"evaluate: rc={rc} in {result['seconds']}s, {games} games, files {files}")
    return result


# --------------------------------------------------------------------------- main check


def run_check(
    entrypoint: str = STANDIN_ENTRYPOINT,
    workdir: str | None = None,
    head_ip: str = "127.0.0.2",
    worker_ip: str = "127.0.0.3",
    cpus_per_node: int = 1,
    job_timeout: float = 600,
    keep: bool = False,
    flagship: bool = False,
    working_dir: str | None = None,
) -> dict:
    """Start the two nodes, run the checks, stop the nodes; the findings. `flagship`: the checks of
    the flagship job (runners on both nodes, league, curriculum, restore) instead of trials on both
    nodes. `working_dir`: the job's `--working-dir` (a runtime env, `.git` excluded)."""
    import shutil

    if not (can_bind(head_ip) and can_bind(worker_ip)):
        # Loopback aliases other than 127.0.0.1 exist on Linux; elsewhere fall back to one IP
        # (Ray then resolves 127.0.0.1 to the machine's address; node ids still tell nodes apart).
        log(f"cannot bind {head_ip}/{worker_ip}; both nodes use 127.0.0.1")
        head_ip = worker_ip = "127.0.0.1"
    work = Path(workdir or tempfile.mkdtemp(prefix="spmn-", dir="/tmp"))
    work.mkdir(parents=True, exist_ok=True)
    storage = work / "storage"
    storage.mkdir(exist_ok=True)
    token_path = work / "auth_token"
    token = secrets.token_hex(32)
    token_path.write_text(token)
    token_path.chmod(0o600)

    env = {k: v for k, v in os.environ.items() if not k.startswith("RAY_")}
    env.update(
        RAY_AUTH_MODE="token",  # `ray start --address`, `ray job submit` and ray.init(address=..)
        RAY_AUTH_TOKEN_PATH=str(token_path),  # ... need both: the mode and the token
        RAY_USAGE_STATS_ENABLED="0",
        PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
        # The nodes (and so the job and its actors) import the code next to this script first.
        PYTHONPATH=os.pathsep.join([str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]),
    )
    gcs_port, dash_port, client_port, agent_head, agent_worker = free_ports(5)
    dashboard = f"http://127.0.0.1:{dash_port}"
    report: dict = {
        "workdir": str(work), "dashboard": dashboard, "entrypoint": entrypoint,
        "head_ip": head_ip, "worker_ip": worker_ip, "checks": {},
        "mode": "flagship" if flagship else "tune", "cpus_per_node": cpus_per_node,
    }
    required = FLAGSHIP_CHECKS if flagship else REQUIRED_CHECKS
    actors: dict[str, dict] = {}
    checks = report["checks"]
    common = [f"--num-cpus={cpus_per_node}", "--num-gpus=0", "--object-store-memory=100000000",
              "--disable-usage-stats"]
    head = RayNode(
        "head",
        ["--head", f"--node-ip-address={head_ip}", f"--port={gcs_port}",
         "--dashboard-host=127.0.0.1", f"--dashboard-port={dash_port}",
         f"--ray-client-server-port={client_port}", f"--dashboard-agent-listen-port={agent_head}",
         '--resources={"spade_head": 1}', *common],
        work / "h", env, work / "head.log",
    )
    worker = RayNode(
        "worker",
        [f"--address={head_ip}:{gcs_port}", f"--node-ip-address={worker_ip}",
         f"--dashboard-agent-listen-port={agent_worker}", '--resources={"spade_worker": 1}', *common],
        work / "w", env, work / "worker.log",
    )
    t0 = time.time()
    try:
        head.start()
        worker.start()
        deadline = time.time() + 60
        nodes: list[dict] = []
        while time.time() < deadline:
            nodes = alive_nodes(dashboard, token)
            if len(nodes) >= 2:
                break
            time.sleep(1)
        report["nodes"] = {n["node_id"]: {"ip": n["node_ip"], "head": n["is_head_node"]} for n in nodes}
        checks["two_nodes_alive"] = len(nodes) == 2
        if not checks["two_nodes_alive"]:
            raise RuntimeError(f"expected 2 alive nodes, saw {len(nodes)}")
        head_id = next(n["node_id"] for n in nodes if n["is_head_node"])
        worker_id = next(n["node_id"] for n in nodes if not n["is_head_node"])
        report["head_node_id"], report["worker_node_id"] = head_id, worker_id
        log(f"cluster up in {time.time() - t0:.1f}s: head {head_id[:12]} worker {worker_id[:12]}")

        # Token auth really is on: clients without the token are refused.
        no_token = {k: v for k, v in env.items() if not k.startswith("RAY_AUTH")}
        r = subprocess.run([ray_executable(), "status", f"--address={head_ip}:{gcs_port}"],
                           env=no_token, capture_output=True, text=True, timeout=60)
        checks["gcs_refuses_missing_token"] = r.returncode != 0 and "AuthenticationError" in (r.stdout + r.stderr)
        checks["http_401_without_token"] = http_get(f"{dashboard}/api/jobs/")[0] == 401
        checks["http_403_wrong_token"] = http_get(f"{dashboard}/api/jobs/", "0" * 64)[0] == 403

        # Submit the job.
        sid = f"spade-multinode-{secrets.token_hex(4)}"
        report["submission_id"] = sid
        ep = entrypoint.format(storage=storage, python=sys.executable, here=HERE, root=ROOT)
        runtime = []
        if working_dir:
            runtime = ["--runtime-env-json",
                       json.dumps({"working_dir": str(working_dir), "excludes": WORKING_DIR_EXCLUDES})]
        cmd = [ray_executable(), "job", "submit", f"--address={dashboard}", f"--submission-id={sid}",
               *runtime, "--", *shlex.split(ep)]
        log(f"submit: {shlex.join(cmd)}")
        t1 = time.time()
        job_log = work / "job.log"
        with open(job_log, "wb") as job_out:
            proc = subprocess.Popen(cmd, env=env, stdout=job_out, stderr=subprocess.STDOUT)
            # While the job runs: which node each env runner (and the trial) lives on.
            while proc.poll() is None and time.time() - t1 < job_timeout:
                if flagship:
                    merge_actors(actors, actors_of(dashboard, token, (RUNNER_CLASS, TRAINABLE_CLASS)))
                time.sleep(2)
            if proc.poll() is None:
                proc.terminate()
                try:
                    proc.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
                rc = 124
            else:
                rc = proc.returncode
        out = job_log.read_text(errors="replace")
        if rc == 124:
            out += f"\n(timed out after {job_timeout}s)"
        report["job_seconds"] = round(time.time() - t1, 1)
        report["job_submit_rc"] = rc
        checks["job_submit_rc_0"] = rc == 0
        log(f"job finished: rc={rc} in {report['job_seconds']}s")
        if rc != 0:
            report["job_log_tail"] = out[-4000:]

        if flagship:  # dead actors keep their rows in the state API
            merge_actors(actors, actors_of(dashboard, token, (RUNNER_CLASS, TRAINABLE_CLASS)))
            report["actors"] = actors
            runner_nodes = nodes_of(actors, RUNNER_CLASS)
            report["runner_nodes"], report["trainable_nodes"] = runner_nodes, nodes_of(actors, TRAINABLE_CLASS)
            checks["runners_found"] = sum(a.get("class_name") == RUNNER_CLASS for a in actors.values()) >= 2
            checks["runners_on_head"] = head_id in runner_nodes
            checks["runners_on_worker"] = worker_id in runner_nodes
            report["flagship"] = flagship_findings(storage)
            checks.update(flagship_checks(report["flagship"]))
            report["job_output"] = [ln for ln in out.splitlines()
                                    if ln.startswith(("training ", "iter ", "done:", "trial dir:", "checkpoint:"))]

        # Trials on both nodes.
        placements = trial_placements(storage)
        ip_to_id = {info["ip"]: nid for nid, info in report["nodes"].items()}
        trial_nodes = {}
        for trial, seen in placements.items():
            nid = seen.get("node_id")
            if nid is None and head_ip != worker_ip:
                nid = ip_to_id.get(seen.get("node_ip"))
            trial_nodes[trial] = nid
        report["trial_nodes"] = trial_nodes
        used = set(trial_nodes.values())
        if not flagship:  # one trial: the runners, not the trials, spread over the nodes
            checks["trials_found"] = len(trial_nodes) > 0
            checks["trials_on_head"] = head_id in used
            checks["trials_on_worker"] = worker_id in used

        # The dashboard's job API lists the job.
        status, body = http_get(f"{dashboard}/api/jobs/", token)
        jobs = json.loads(body) if status == 200 else []
        mine = [j for j in jobs if j.get("submission_id") == sid]
        report["api_job_status"] = mine[0].get("status") if mine else None
        checks["api_lists_job"] = bool(mine)
        checks["api_job_succeeded"] = report["api_job_status"] == "SUCCEEDED"
    except Exception as e:  # reported, then the nodes are stopped
        report["error"] = f"{type(e).__name__}: {e}"
        log(report["error"])
    finally:
        report["stop"] = {"worker": worker.stop(), "head": head.stop()}
        left = [p.pid for p in worker.processes() + head.processes()
                if p.is_running() and p.status() != "zombie"]
        checks["nodes_stopped"] = not left
    # The checkpoint restores on this machine alone: no cluster, no RAY_ADDRESS.
    trial = (report.get("flagship") or {}).get("trial")
    if flagship and trial and "error" not in report:
        out_dir = work / "evaluate"
        local_env = {k: v for k, v in env.items() if not k.startswith("RAY_")}
        report["evaluate"] = evaluate_restore(trial, out_dir, local_env)
        checks["evaluate_rc_0"] = report["evaluate"]["rc"] == 0
        checks["evaluate_files"] = (len(report["evaluate"]["files"]) == len(EVALUATE_FILES)
                                    and report["evaluate"]["games"] >= 2)
    report["seconds"] = round(time.time() - t0, 1)
    report["ok"] = "error" not in report and all(checks.get(k) for k in required)
    report["failed_checks"] = [k for k in required if not checks.get(k)]
    if not keep and report["ok"]:
        shutil.rmtree(work, ignore_errors=True)
    return report


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--entrypoint", default=os.environ.get("SPADE_MULTINODE_ENTRYPOINT", STANDIN_ENTRYPOINT),
                   help="job command template ({storage}, {python}, {here}, {root}); default: the stand-in job")
    p.add_argument("--sweep", action="store_true", help=f"use the real sweep: {SWEEP_ENTRYPOINT!r}")
    p.add_argument("--flagship", action="store_true",
                   help="the flagship training as users run it (FLAGSHIP_ENTRYPOINT, submitted with this checkout as "
                        "its working dir), with its own checks: env runners on both nodes, league and curriculum, "
                        "and the checkpoint restoring on this machine after the cluster is stopped")
    p.add_argument("--workdir", help="folder for tokens, temp dirs, logs, storage (default: fresh under /tmp)")
    p.add_argument("--head-ip", default="127.0.0.2")
    p.add_argument("--worker-ip", default="127.0.0.3")
    p.add_argument("--cpus-per-node", type=int, default=None,
                   help="logical CPUs per node (default 1; 2 with --flagship: main process + 2 runners)")
    p.add_argument("--job-timeout", type=float, default=600)
    p.add_argument("--keep", action="store_true", help="keep the workdir even when all checks pass")
    p.add_argument("--report", help="write the findings as JSON here")
    a = p.parse_args(argv)
    if a.sweep and a.flagship:
        p.error("--sweep and --flagship: choose one")
    if a.cpus_per_node is not None and a.cpus_per_node < 1:
        p.error(f"--cpus-per-node = {a.cpus_per_node}: out of range, at least 1")
    if a.job_timeout <= 0:
        p.error(f"--job-timeout = {a.job_timeout:g}: out of range, more than 0 seconds")
    # SIGTERM (e.g. a test's timeout) unwinds through run_check's `finally`: the nodes get stopped.
    def _on_sigterm(*_):
        log("SIGTERM: stopping the nodes")
        sys.exit(143)

    signal.signal(signal.SIGTERM, _on_sigterm)
    entrypoint = SWEEP_ENTRYPOINT if a.sweep else FLAGSHIP_ENTRYPOINT if a.flagship else a.entrypoint
    report = run_check(
        entrypoint=entrypoint, workdir=a.workdir,
        head_ip=a.head_ip, worker_ip=a.worker_ip,
        cpus_per_node=a.cpus_per_node if a.cpus_per_node is not None else (2 if a.flagship else 1),
        job_timeout=a.job_timeout, keep=a.keep, flagship=a.flagship,
        working_dir=str(ROOT) if a.flagship else None,
    )
    text = json.dumps(report, indent=2, sort_keys=True)
    if a.report:
        Path(a.report).write_text(text)
    print(text)
    log("PASSED" if report["ok"] else f"FAILED (workdir kept: {report['workdir']})")
    return 0 if report["ok"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
