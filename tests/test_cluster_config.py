"""Static checks of the cluster launcher configs (cluster/local.yaml, cluster/kuberay.yaml) and
the cluster scripts. No Ray cluster, no network: fast."""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import pytest

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    tomllib = pytest.importorskip("tomli")
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
CLUSTER = ROOT / "cluster"
LOCAL_YAML = CLUSTER / "local.yaml"
KUBERAY_YAML = CLUSTER / "kuberay.yaml"


def _pins() -> dict[str, str]:
    """{'ray': '==2.60.*', 'torch': '==2.13.0', ...} from pyproject.toml's dependencies."""
    deps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    pins = {}
    for dep in deps:
        m = re.match(r"^\s*([A-Za-z0-9_.-]+)(\[[^\]]*\])?\s*(.*)$", dep)
        pins[m.group(1).lower()] = m.group(3).replace(" ", "")
    return pins


@pytest.fixture(scope="module")
def local_cfg() -> dict:
    return yaml.safe_load(LOCAL_YAML.read_text())


def _ray_schema() -> dict:
    import ray.autoscaler

    return json.loads((Path(ray.autoscaler.__file__).parent / "ray-schema.json").read_text())


def test_local_yaml_matches_rays_cluster_schema(local_cfg):
    jsonschema = pytest.importorskip("jsonschema")
    jsonschema.validate(local_cfg, _ray_schema())


def test_local_yaml_passes_rays_own_validation(local_cfg):
    """What `ray up` does before touching a node: fill defaults, prepare the local provider,
    validate against the schema."""
    from ray.autoscaler._private.util import prepare_config, validate_config

    cfg = prepare_config(local_cfg)
    validate_config(cfg)
    node_types = cfg["available_node_types"]
    assert cfg["head_node_type"] in node_types
    # min/max workers default to the number of worker_ips: all of them are started.
    n = len(local_cfg["provider"]["worker_ips"])
    assert cfg["max_workers"] == n
    assert node_types[cfg["head_node_type"]]["min_workers"] == n


def test_local_provider_fields(local_cfg):
    p = local_cfg["provider"]
    assert p["type"] == "local"
    assert isinstance(p["head_ip"], str) and p["head_ip"]
    assert isinstance(p["worker_ips"], list) and p["worker_ips"]
    text = LOCAL_YAML.read_text()
    assert text.count("FILL IN") >= 3, "head_ip, worker_ips and auth need fill-in comments"
    assert set(local_cfg["auth"]) == {"ssh_user", "ssh_private_key"}


def test_file_mounts_sync_the_project_and_token(local_cfg):
    mounts = local_cfg["file_mounts"]
    assert mounts["~/.ray/auth_token"] == "~/.ray/auth_token"
    project = {k: v for k, v in mounts.items() if k.startswith("~/spade_rllib")}
    # What `pip install -e ~/spade_rllib` needs, and the package itself.
    for needed in ("pyproject.toml", "README.md", "spade_rllib"):
        assert f"~/spade_rllib/{needed}" in project, needed
    for remote, local in project.items():
        assert local.startswith("./"), "relative to the repository root, where `ray up` runs"
        assert (ROOT / local).exists(), f"file_mounts source {local} does not exist"
        assert remote == "~/spade_rllib/" + local[2:]
    # `ray up` hashes every file under each local path: never the whole repo (.venv, results).
    assert "." not in mounts.values() and "./" not in mounts.values()


def test_setup_commands_install_the_project_with_the_same_pins(local_cfg):
    pins = _pins()
    setup = " ".join(local_cfg["setup_commands"])
    assert f'"ray[rllib,tune,default]{pins["ray"]}"' in setup
    assert f'"torch{pins["torch"]}"' in setup
    assert "-e ~/spade_rllib" in setup
    # Nothing upgrades Ray behind the pins.
    for cmd in local_cfg["setup_commands"]:
        if re.search(r"pip install.*(-U\b|--upgrade)", cmd):
            assert not re.search(r"\bray\b", cmd), cmd


def test_start_commands(local_cfg):
    head = " ".join(local_cfg["head_start_ray_commands"])
    worker = " ".join(local_cfg["worker_start_ray_commands"])
    assert "--autoscaling-config=~/ray_bootstrap_config.yaml" in head
    assert "--head" in head
    assert "--dashboard-host=127.0.0.1" in head  # dashboard and job API on loopback only
    assert "--dashboard-host=0.0.0.0" not in head
    # Token authentication on, on both kinds of node (a worker's `ray start --address` does not
    # switch it on by itself; RAY_AUTH_MODE=token is needed).
    assert "RAY_AUTH_MODE=token" in head and "RAY_AUTH_MODE=token" in worker
    assert "RAY_AUTH_MODE=disabled" not in head + worker
    assert "--address=$RAY_HEAD_IP:6379" in worker
    assert "--port=6379" in head
    # ray up's default autoscaler v2 starts one worker too few with the local provider.
    assert "RAY_enable_autoscaler_v2=0" in head


def test_docker_block_documented_in_local_yaml():
    text = LOCAL_YAML.read_text()
    assert "# docker:" in text and "--shm-size" in text


@pytest.mark.skipif(not KUBERAY_YAML.exists(), reason="no cluster/kuberay.yaml")
def test_kuberay_rayjob():
    docs = [d for d in yaml.safe_load_all(KUBERAY_YAML.read_text()) if d]
    job = next(d for d in docs if d["kind"] == "RayJob")
    assert job["apiVersion"].startswith("ray.io/")
    spec = job["spec"]
    assert "spade_rllib.tune" in spec["entrypoint"]
    cluster = spec["rayClusterSpec"]
    assert cluster["rayVersion"].startswith("2.60")
    head = cluster["headGroupSpec"]
    assert head["rayStartParams"].get("dashboard-host") == "127.0.0.1" or \
        "dashboard-host" not in head["rayStartParams"]
    images = {c["image"] for c in head["template"]["spec"]["containers"]}
    for group in cluster["workerGroupSpecs"]:
        images |= {c["image"] for c in group["template"]["spec"]["containers"]}
    assert len(images) == 1, f"one image for head and workers, got {images}"
    # Token auth on (KubeRay's auth option), no unauthenticated dashboard.
    assert cluster.get("authOptions", {}).get("mode") == "token"
    # What the faults need (docs/scaling.md): retries of the job and of the trial, checkpoints by time,
    # storage every pod sees, Ray pods replaced rather than restarted in place.
    assert spec["backoffLimit"] >= 1
    assert "training.max_failures=" in spec["entrypoint"] and "training.checkpoint_every_s=" in spec["entrypoint"]
    assert "--storage /mnt/shared/" in spec["entrypoint"]
    pods = [head["template"]["spec"], *(g["template"]["spec"] for g in cluster["workerGroupSpecs"])]
    assert all(p.get("restartPolicy") == "Never" for p in pods)
    for pod in pods:
        claims = [v["persistentVolumeClaim"]["claimName"] for v in pod["volumes"] if "persistentVolumeClaim" in v]
        assert claims and any(m["mountPath"] == "/mnt/shared" for c in pod["containers"] for m in c["volumeMounts"])


def test_multinode_check_cli_help():
    r = subprocess.run([sys.executable, str(CLUSTER / "multinode_check.py"), "--help"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert "--entrypoint" in r.stdout and "{storage}" in r.stdout


def test_multinode_trial_placements_parser(tmp_path):
    sys.path.insert(0, str(CLUSTER))
    try:
        import multinode_check as mc
    finally:
        sys.path.remove(str(CLUSTER))
    a = tmp_path / "exp" / "trial_a"
    b = tmp_path / "exp" / "trial_b"
    a.mkdir(parents=True)
    b.mkdir(parents=True)
    (a / "result.json").write_text(
        json.dumps({"node_id": "n1", "node_ip": "127.0.0.2"}) + "\n" + "not json\n")
    (b / "result.json").write_text(json.dumps({"node_ip": "127.0.0.3", "training_iteration": 1}) + "\n")
    got = mc.trial_placements(tmp_path)
    assert got == {"exp/trial_a": {"node_id": "n1", "node_ip": "127.0.0.2"},
                   "exp/trial_b": {"node_ip": "127.0.0.3"}}
    assert "{storage}" in mc.SWEEP_ENTRYPOINT and "--sweep lr_gamma --smoke" in mc.SWEEP_ENTRYPOINT


def _multinode_check():
    sys.path.insert(0, str(CLUSTER))
    try:
        import multinode_check as mc
    finally:
        sys.path.remove(str(CLUSTER))
    return mc


def test_multinode_flagship_entrypoint_is_the_users_command_and_a_valid_config(tmp_path):
    """The flagship job is `python -m spade_rllib.train --config tune_configs/flagship.yaml --address auto`
    with `--set` overrides that the config accepts: 2 env runners, league and PLR left on."""
    from spade_rllib.config.run_config import load_config

    mc = _multinode_check()
    ep = mc.FLAGSHIP_ENTRYPOINT
    assert ep.startswith("python -m spade_rllib.train --config tune_configs/flagship.yaml --address auto ")
    assert "{storage}" in ep and "{" not in ep.replace("{storage}", "")
    args = ep.format(storage=tmp_path).split()
    sets = [args[i + 1] for i, a in enumerate(args) if a == "--set"]
    assert len(sets) == len(mc.FLAGSHIP_SETS)
    cfg = load_config(str(ROOT / "tune_configs" / "flagship.yaml"), sets, resolve=False)
    assert cfg.training.num_env_runners == 2 and cfg.training.stop.iterations == 3
    assert cfg.league.enabled and cfg.league.sampling == "pfsp" and cfg.league.every_n_iterations == 1
    assert cfg.curriculum.enabled and cfg.curriculum.strategy == "plr"
    assert cfg.experiment.storage_path == str(tmp_path) and cfg.resources.num_learners == 0
    # No shell metacharacters: Ray runs the entrypoint through a shell.
    assert not re.search(r"[][*?$`;&|<>(){}\\'\"]", ep.replace("{storage}", ""))
    assert mc.FLAGSHIP_CHECKS[-2:] == ("evaluate_rc_0", "evaluate_files")
    assert "--local" in mc.EVALUATE_ARGS and "--no-league" in mc.EVALUATE_ARGS


def _result_rows(trial: Path, rows: list[dict]) -> None:
    trial.mkdir(parents=True)
    (trial / "result.json").write_text("\n".join(json.dumps(r) for r in rows) + "\n")


def test_multinode_flagship_findings_and_checks(tmp_path):
    mc = _multinode_check()
    assert mc.flagship_findings(tmp_path) == {}
    trial = tmp_path / "flagship" / "flagship_abc"
    nested = [
        {"training_iteration": i, "node_ip": "127.0.0.2",
         "league": {"size": 5.0 + i, "snapshots_total": float(i),
                    "plan": {"main": 0.4, "bot:rusher": 0.3, **({f"main_v{i - 1}": 0.3} if i > 1 else {})}},
         "curriculum": {"buffer_size": 4.0 * i, "episodes": 8.0 * i, "score_mean": float("nan")}}
        for i in (1, 2, 3)
    ]
    _result_rows(trial, nested)
    (trial / "checkpoint_000000").mkdir()
    (trial / "checkpoint_000000" / "algorithm_state.pkl").write_bytes(b"x")
    found = mc.flagship_findings(tmp_path)
    assert found["trial"] == str(trial) and found["checkpoints"] == ["checkpoint_000000"]
    assert [i["league_size"] for i in found["iterations"]] == [6.0, 7.0, 8.0]
    assert [i["pfsp_snapshot_share"] for i in found["iterations"]] == [0.0, 0.3, 0.3]
    assert found["iterations"][-1]["curriculum_score_mean"] is None  # NaN: not reported
    assert all(mc.flagship_checks(found).values()), mc.flagship_checks(found)

    # Flat keys read the same; a league that did not grow, no PFSP snapshot, an empty curriculum fail.
    flat = [{"training_iteration": i, "league/size": 6.0, "league/snapshots_total": 0.0, "league/plan/main": 1.0,
             "curriculum/buffer_size": 0.0, "curriculum/episodes": 3.0} for i in (1, 2)]
    other = tmp_path / "other"
    _result_rows(other / "flagship" / "flagship_x", flat)
    checks = mc.flagship_checks(mc.flagship_findings(other))
    assert checks == {"trials_found": True, "league_grew": False, "pfsp_planned_snapshot": False,
                      "curriculum_metrics": False, "checkpoint_written": False}


def test_multinode_runner_nodes_from_the_state_api_rows():
    mc = _multinode_check()
    seen: dict = {}
    mc.merge_actors(seen, [
        {"actor_id": "a1", "class_name": "SpadeEnvRunner", "node_id": "head", "pid": 11, "state": "ALIVE"},
        {"actor_id": "a2", "class_name": "SpadeEnvRunner", "node_id": None, "pid": 0, "state": "PENDING_CREATION"},
        {"actor_id": "t1", "class_name": "SpadePPO", "node_id": "head", "pid": 10, "state": "ALIVE"},
    ])
    assert mc.nodes_of(seen, "SpadeEnvRunner") == ["head"]
    mc.merge_actors(seen, [{"actor_id": "a2", "class_name": "SpadeEnvRunner", "node_id": "worker", "state": "ALIVE"}])
    # Dead, its node id no longer reported: the one seen while it ran stays.
    mc.merge_actors(seen, [{"actor_id": "a2", "class_name": "SpadeEnvRunner", "node_id": "", "state": "DEAD"}])
    assert seen["a2"]["state"] == "DEAD" and seen["a2"]["node_id"] == "worker"
    assert mc.nodes_of(seen, "SpadeEnvRunner") == ["head", "worker"]
    assert mc.nodes_of(seen, "SpadePPO") == ["head"]


def test_multinode_evaluate_restore_reports_a_failure(tmp_path):
    """The restore check fails (exit status, no files) when the trial dir holds no checkpoint."""
    mc = _multinode_check()
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAY_")}
    got = mc.evaluate_restore(str(tmp_path / "no_trial"), tmp_path / "out", env, timeout=120)
    assert got["rc"] != 0 and got["files"] == [] and got["games"] == 0 and got["tail"], got


def test_multinode_check_refuses_bad_flags_in_one_line():
    for args, msg in ((["--sweep", "--flagship"], "choose one"), (["--cpus-per-node", "0"], "--cpus-per-node = 0"),
                      (["--job-timeout", "-1"], "--job-timeout = -1")):
        r = subprocess.run([sys.executable, str(CLUSTER / "multinode_check.py"), *args],
                           capture_output=True, text=True, timeout=60)
        assert r.returncode == 2 and msg in r.stderr, (args, r.stderr)


def test_smoke_test_script_is_valid_bash():
    script = CLUSTER / "smoke_test.sh"
    r = subprocess.run(["bash", "-n", str(script)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    text = script.read_text()
    assert "ray up -y" in text and "ray down -y" in text and "trap cleanup EXIT" in text
    # Only loopback is targeted.
    for ip in re.findall(r"\b\d{1,3}\.\d{1,3}\.\d{1,3}\.\d{1,3}\b", text):
        assert ip.startswith("127."), ip
    # No unquoted here-document feeds code to an interpreter (a backquote in it would run).
    assert not re.search(r'"\$PY"[^\n]*<<EOF', text)
    if shutil.which("shellcheck"):
        r = subprocess.run(["shellcheck", "-S", "error", str(script)], capture_output=True, text=True)
        assert r.returncode == 0, r.stdout
