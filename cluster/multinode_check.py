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
`{python}` the interpreter running this script, `{here}` this folder. Default: the stand-in Tune
job `cluster/standin_tune_job.py`. For the real sweep:

    python cluster/multinode_check.py --entrypoint \
        "python -m spade_rllib.tune --sweep lr_gamma --smoke --address auto --storage {storage}"

Exit status 0 when every check passed. `--report FILE` writes the findings as JSON.
"""
from __future__ import annotations

import argparse
import glob
import json
import os
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
STANDIN_ENTRYPOINT = "{python} {here}/standin_tune_job.py --storage {storage}"
SWEEP_ENTRYPOINT = (
    "python -m spade_rllib.tune --sweep lr_gamma --smoke --address auto --storage {storage}"
)


REQUIRED_CHECKS = (
    "two_nodes_alive", "gcs_refuses_missing_token", "http_401_without_token", "http_403_wrong_token",
    "job_submit_rc_0", "trials_found", "trials_on_head", "trials_on_worker", "api_lists_job",
    "api_job_succeeded", "nodes_stopped",
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
                raise RuntimeError(f"{self.name}: `ray start` did not return in {timeout}s")
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


# --------------------------------------------------------------------------- main check


def run_check(
    entrypoint: str = STANDIN_ENTRYPOINT,
    workdir: str | None = None,
    head_ip: str = "127.0.0.2",
    worker_ip: str = "127.0.0.3",
    cpus_per_node: int = 1,
    job_timeout: float = 600,
    keep: bool = False,
) -> dict:
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
    )
    gcs_port, dash_port, client_port, agent_head, agent_worker = free_ports(5)
    dashboard = f"http://127.0.0.1:{dash_port}"
    report: dict = {
        "workdir": str(work), "dashboard": dashboard, "entrypoint": entrypoint,
        "head_ip": head_ip, "worker_ip": worker_ip, "checks": {},
    }
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
        ep = entrypoint.format(storage=storage, python=sys.executable, here=HERE)
        cmd = [ray_executable(), "job", "submit", f"--address={dashboard}", f"--submission-id={sid}",
               "--", *shlex.split(ep)]
        log(f"submit: {shlex.join(cmd)}")
        t1 = time.time()
        try:
            r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=job_timeout)
            rc, out = r.returncode, r.stdout + r.stderr
        except subprocess.TimeoutExpired as e:
            rc, out = 124, f"{e.stdout or ''}{e.stderr or ''}\n(timed out after {job_timeout}s)"
        (work / "job.log").write_text(out if isinstance(out, str) else out.decode(errors="replace"))
        report["job_seconds"] = round(time.time() - t1, 1)
        report["job_submit_rc"] = rc
        checks["job_submit_rc_0"] = rc == 0
        log(f"job finished: rc={rc} in {report['job_seconds']}s")
        if rc != 0:
            report["job_log_tail"] = out[-4000:]

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
        report["seconds"] = round(time.time() - t0, 1)
        report["ok"] = "error" not in report and all(checks.get(k) for k in REQUIRED_CHECKS)
        if not keep and report["ok"]:
            shutil.rmtree(work, ignore_errors=True)
    return report


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--entrypoint", default=os.environ.get("SPADE_MULTINODE_ENTRYPOINT", STANDIN_ENTRYPOINT),
                   help="job command template ({storage}, {python}, {here}); default: the stand-in job")
    p.add_argument("--sweep", action="store_true", help=f"use the real sweep: {SWEEP_ENTRYPOINT!r}")
    p.add_argument("--workdir", help="folder for tokens, temp dirs, logs, storage (default: fresh under /tmp)")
    p.add_argument("--head-ip", default="127.0.0.2")
    p.add_argument("--worker-ip", default="127.0.0.3")
    p.add_argument("--cpus-per-node", type=int, default=1)
    p.add_argument("--job-timeout", type=float, default=600)
    p.add_argument("--keep", action="store_true", help="keep the workdir even when all checks pass")
    p.add_argument("--report", help="write the findings as JSON here")
    a = p.parse_args(argv)
    # SIGTERM (e.g. a test's timeout) unwinds through run_check's `finally`: the nodes get stopped.
    def _on_sigterm(*_):
        log("SIGTERM: stopping the nodes")
        sys.exit(143)

    signal.signal(signal.SIGTERM, _on_sigterm)
    report = run_check(
        entrypoint=SWEEP_ENTRYPOINT if a.sweep else a.entrypoint, workdir=a.workdir,
        head_ip=a.head_ip, worker_ip=a.worker_ip, cpus_per_node=a.cpus_per_node,
        job_timeout=a.job_timeout, keep=a.keep,
    )
    text = json.dumps(report, indent=2, sort_keys=True)
    if a.report:
        Path(a.report).write_text(text)
    print(text)
    log("PASSED" if report["ok"] else f"FAILED (workdir kept: {report['workdir']})")
    return 0 if report["ok"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
