#!/usr/bin/env bash
# cluster/smoke_test.sh: `ray up -y`, a job, `ray down -y` with cluster/local.yaml against THIS
# machine over SSH on loopback, then removes everything it created.
#
#   sudo bash cluster/smoke_test.sh        # Linux, root (installs packages, adds a user)
#
# What it does:
#  1. apt-get installs openssh-server and rsync (the launcher needs ssh and rsync) if missing.
#  2. Creates a throw-away user (SMOKE_USER, default spadesmoke) with an SSH key in its
#     authorized_keys and starts a private sshd (own config, host key and pid file) listening only
#     on the loopback addresses used below, port 22.
#     A separate user matters: `ray up` runs `ray stop` on the head and `ray down` runs it again;
#     `ray stop` stops every Ray process its user may signal, so as the throw-away user it cannot
#     touch anybody else's Ray on this machine.
#  3. Writes a copy of cluster/local.yaml: head_ip 127.0.0.2 and one worker 127.0.0.3 (loopback
#     aliases; with 127.0.0.1 Ray would advertise the machine's external address instead, see
#     `resolve_ip_for_localhost` in ray/_private/services.py), auth = that user and key, free
#     ports, a private temp dir per node, 1 CPU per node, and setup_commands that link a
#     virtualenv over the project's existing one (SMOKE_VENV, default .venv) instead of
#     pip-installing Ray and torch again. (That overlay venv uses /usr/bin/python3 and adds the
#     project venv's site-packages: the project venv's own interpreter may sit where the
#     throw-away user cannot run it, e.g. under /root/.pyenv.)
#     Everything else (file_mounts, the token file, RAY_AUTH_MODE=token, dashboard on 127.0.0.1,
#     --autoscaling-config) is the real file's.
#  4. As that user: `ray get-auth-token --generate`, `ray up -y`, `ray dashboard` (SSH tunnel),
#     `ray job submit` through the tunnel (a stand-in Tune job that waits for the worker the
#     head's autoscaler starts, then runs trials on both nodes), checks the job API refuses a
#     request without the token, `ray down -y`.
#  5. Cleans up: tunnel, the user's processes, sshd, the user and its home, the work folder, and
#     the packages it installed (keep them with SMOKE_KEEP_PACKAGES=1).
# Exit status 0 when the job succeeded on both nodes and everything was torn down.
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${SMOKE_VENV:-$REPO/.venv}"
SMOKE_USER="${SMOKE_USER:-spadesmoke}"
HEAD_IP="${SMOKE_HEAD_IP:-127.0.0.2}"
WORKER_IP="${SMOKE_WORKER_IP:-127.0.0.3}"
TIMEOUT_UP="${SMOKE_TIMEOUT_UP:-600}"
TIMEOUT_JOB="${SMOKE_TIMEOUT_JOB:-600}"
PY="$VENV/bin/python"

log() { printf '[smoke %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() { log "FAILED: $*"; exit 1; }

[[ $(id -u) -eq 0 ]] || die "run as root (it installs packages, adds a user, starts sshd)"
[[ -x "$PY" ]] || die "no virtualenv at $VENV (set SMOKE_VENV)"
for ip in "$HEAD_IP" "$WORKER_IP"; do
  [[ $ip == 127.* ]] || die "$ip is not a loopback address; this test only uses loopback"
done
if id "$SMOKE_USER" >/dev/null 2>&1; then die "user $SMOKE_USER already exists; pick SMOKE_USER"; fi

WORK="$(mktemp -d /tmp/spsmoke.XXXXXX)"
chmod 755 "$WORK"
INSTALLED_PKGS=()
SSHD_PID=""
TUNNEL_PID=""
CREATED_RUN_SSHD=0
USER_CREATED=0
RESULT=1

as_user() {  # run a command line as the smoke user, in the repository, with its login env
  runuser -u "$SMOKE_USER" -- env -i HOME="/home/$SMOKE_USER" USER="$SMOKE_USER" LOGNAME="$SMOKE_USER" \
    SHELL=/bin/bash PATH="$WORK/venv/bin:/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin" \
    RAY_TMPDIR="$WORK/tmp" RAY_AUTH_MODE=token RAY_USAGE_STATS_ENABLED=0 \
    bash -c "cd '$REPO' && $1"
}

user_pids() {  # every process of the smoke user (uid-exact; nothing else is matched)
  local uid; uid="$(id -u "$SMOKE_USER" 2>/dev/null)" || return 0
  ps -eo pid=,uid= | awk -v u="$uid" '$2 == u {print $1}'
}

cleanup() {
  set +e
  log "cleanup"
  [[ -n $TUNNEL_PID ]] && kill "$TUNNEL_PID" 2>/dev/null
  if [[ $USER_CREATED -eq 1 ]]; then
    local pids; pids="$(user_pids)"
    if [[ -n $pids ]]; then
      log "stopping leftover processes of $SMOKE_USER: $(echo $pids)"
      kill -TERM $pids 2>/dev/null; sleep 5
      pids="$(user_pids)"; [[ -n $pids ]] && kill -KILL $pids 2>/dev/null; sleep 1
    fi
    # What its processes left in the shared temp folders (launcher config cache, SSH control
    # sockets, multiprocessing dirs): only entries owned by this user.
    find /tmp /var/tmp /dev/shm -maxdepth 1 -mindepth 1 -user "$SMOKE_USER" -exec rm -rf {} + 2>/dev/null
    userdel -r "$SMOKE_USER" >/dev/null 2>&1 || userdel -f -r "$SMOKE_USER" >/dev/null 2>&1
  fi
  if [[ -n $SSHD_PID ]]; then kill "$SSHD_PID" 2>/dev/null; fi
  [[ $CREATED_RUN_SSHD -eq 1 ]] && rmdir /run/sshd 2>/dev/null
  if [[ ${#INSTALLED_PKGS[@]} -gt 0 && ${SMOKE_KEEP_PACKAGES:-0} != 1 ]]; then
    log "removing packages installed for the test: ${INSTALLED_PKGS[*]}"
    DEBIAN_FRONTEND=noninteractive apt-get purge -y -qq "${INSTALLED_PKGS[@]}" >/dev/null 2>&1
    DEBIAN_FRONTEND=noninteractive apt-get autoremove -y -qq >/dev/null 2>&1
  fi
  if [[ $RESULT -eq 0 || ${SMOKE_KEEP_WORK:-0} != 1 ]]; then rm -rf "$WORK"; else log "kept $WORK"; fi
  if [[ $RESULT -eq 0 ]]; then log "PASSED"; else log "FAILED (see the log above)"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# 1. Packages ------------------------------------------------------------------------------
need=()
[[ -x /usr/sbin/sshd ]] || need+=(openssh-server)
command -v rsync >/dev/null || need+=(rsync)
command -v ssh >/dev/null || need+=(openssh-client)
if [[ ${#need[@]} -gt 0 ]]; then
  log "apt-get install ${need[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
  INSTALLED_PKGS=("${need[@]}")
fi

# 2. Overlay virtualenv, user, key, sshd on loopback ----------------------------------------
SITE="$("$PY" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
PYVER="$("$PY" -c 'import sys; print(f"{sys.version_info[0]}.{sys.version_info[1]}")')"
SYS_PY="${SMOKE_SYSTEM_PYTHON:-/usr/bin/python$PYVER}"   # not a pyenv shim: under /root too
[[ -x $SYS_PY ]] || die "no $SYS_PY (same minor version as the venv) to build the overlay venv with"
"$SYS_PY" -m venv --without-pip "$WORK/venv"
echo "import site; site.addsitedir('$SITE')" >"$WORK/venv/lib/python$PYVER/site-packages/zz_spade_shared.pth"
printf '#!%s\nimport sys\nfrom ray.scripts.scripts import main\nsys.exit(main())\n' \
  "$WORK/venv/bin/python" >"$WORK/venv/bin/ray"
chmod 755 "$WORK/venv/bin/ray"
"$WORK/venv/bin/python" -c 'import ray, spade_rllib' || die "overlay venv cannot import ray/spade_rllib"
chmod -R a+rX "$WORK/venv"

# ---- ------------------------------------------------------------
useradd --create-home --shell /bin/bash "$SMOKE_USER"
USER_CREATED=1
usermod -p '*' "$SMOKE_USER"   # no password, but not "locked" (sshd refuses locked accounts)
HOME_DIR="/home/$SMOKE_USER"
install -d -m 700 -o "$SMOKE_USER" -g "$SMOKE_USER" "$HOME_DIR/.ssh" "$WORK/tmp"
chown "$SMOKE_USER:" "$WORK/tmp"
as_user "python -c 'import ray, spade_rllib'" || die "$SMOKE_USER cannot run the overlay venv"
ssh-keygen -q -t ed25519 -N '' -C spade-smoke -f "$HOME_DIR/.ssh/id_ed25519"
cp "$HOME_DIR/.ssh/id_ed25519.pub" "$HOME_DIR/.ssh/authorized_keys"
chown -R "$SMOKE_USER:" "$HOME_DIR/.ssh"
chmod 600 "$HOME_DIR/.ssh/authorized_keys" "$HOME_DIR/.ssh/id_ed25519"

for ip in "$HEAD_IP" "$WORKER_IP"; do
  if (exec 3<>"/dev/tcp/$ip/22") 2>/dev/null; then die "something already listens on $ip:22"; fi
done
ssh-keygen -q -t ed25519 -N '' -f "$WORK/ssh_host_ed25519_key"
cat >"$WORK/sshd_config" <<EOF
Port 22
ListenAddress $HEAD_IP
ListenAddress $WORKER_IP
HostKey $WORK/ssh_host_ed25519_key
PidFile $WORK/sshd.pid
AllowUsers $SMOKE_USER
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
PermitRootLogin no
UsePAM no
AllowTcpForwarding yes
X11Forwarding no
MaxStartups 50:30:100
MaxSessions 50
EOF
if [[ ! -d /run/sshd ]]; then mkdir -p /run/sshd; chmod 755 /run/sshd; CREATED_RUN_SSHD=1; fi
/usr/sbin/sshd -t -f "$WORK/sshd_config" || die "sshd config test failed"
/usr/sbin/sshd -f "$WORK/sshd_config" -E "$WORK/sshd.log"
for _ in $(seq 50); do [[ -s $WORK/sshd.pid ]] && break; sleep 0.1; done
SSHD_PID="$(cat "$WORK/sshd.pid")"
log "sshd pid $SSHD_PID on $HEAD_IP:22 and $WORKER_IP:22"
as_user "ssh -o BatchMode=yes -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -i ~/.ssh/id_ed25519 $SMOKE_USER@$HEAD_IP true" \
  || die "ssh to $SMOKE_USER@$HEAD_IP does not work"

# 3. The cluster YAML copy ------------------------------------------------------------------
read -r GCS_PORT DASH_PORT CLIENT_PORT AGENT_HEAD AGENT_WORKER TUNNEL_PORT < <("$PY" - <<'EOF'
import socket
socks = [socket.socket() for _ in range(6)]
for s in socks:
    s.bind(("127.0.0.1", 0))
print(*[s.getsockname()[1] for s in socks])
EOF
)
YAML="$WORK/smoke.yaml"
# Quoted here-document: nothing in the Python below is expanded by the shell; values come in
# through the environment.
SM_HEAD_IP="$HEAD_IP" SM_WORKER_IP="$WORKER_IP" SM_USER="$SMOKE_USER" SM_WORK="$WORK" \
SM_GCS_PORT="$GCS_PORT" SM_DASH_PORT="$DASH_PORT" SM_CLIENT_PORT="$CLIENT_PORT" \
SM_AGENT_HEAD="$AGENT_HEAD" SM_AGENT_WORKER="$AGENT_WORKER" \
  "$PY" - "$REPO/cluster/local.yaml" "$YAML" <<'EOF'
import os, sys, yaml
e = os.environ
src, dst = sys.argv[1], sys.argv[2]
c = yaml.safe_load(open(src))
c["cluster_name"] = "spade-smoke"
c["provider"]["head_ip"] = e["SM_HEAD_IP"]
c["provider"]["worker_ips"] = [e["SM_WORKER_IP"]]
c["auth"] = {"ssh_user": e["SM_USER"], "ssh_private_key": "~/.ssh/id_ed25519"}
# The overlay venv already sees the pinned Ray/torch and the project: link it instead of
# pip-installing (no network needed). The setup lines after the pip install are the real ones.
setup = c["setup_commands"]
i = max(k for k, cmd in enumerate(setup) if "pip install" in cmd)
c["setup_commands"] = [
    f"ln -sfn {e['SM_WORK']}/venv ~/spade-venv",
    "~/spade-venv/bin/python -c 'import ray, spade_rllib;"
    " assert ray.__version__.startswith(\"2.60.\"), ray.__version__'",
    f"grep -q RAY_TMPDIR ~/.bashrc || echo 'export RAY_TMPDIR={e['SM_WORK']}/tmp' >> ~/.bashrc",
] + setup[i + 1:]


def edit(cmds, node_ip, temp, agent, is_head):
    out = []
    for cmd in cmds:
        cmd = cmd.replace("--port=6379", "--port=" + e["SM_GCS_PORT"])
        cmd = cmd.replace(":6379", ":" + e["SM_GCS_PORT"])
        cmd = cmd.replace("--dashboard-port=8265", "--dashboard-port=" + e["SM_DASH_PORT"])
        if "ray start" in cmd:
            cmd += (f" --node-ip-address={node_ip} --temp-dir={temp} --num-cpus=1"
                    f" --dashboard-agent-listen-port={agent} --object-store-memory=100000000")
            if is_head:
                cmd += " --ray-client-server-port=" + e["SM_CLIENT_PORT"]
        # Same machine and user: the worker's "ray stop" would stop the head. Skip it here.
        if not is_head and cmd.strip().endswith("ray stop"):
            continue
        out.append(cmd)
    return out


w = e["SM_WORK"]
c["head_start_ray_commands"] = edit(
    c["head_start_ray_commands"], e["SM_HEAD_IP"], f"{w}/tmp/head", e["SM_AGENT_HEAD"], True)
c["worker_start_ray_commands"] = edit(
    c["worker_start_ray_commands"], e["SM_WORKER_IP"], f"{w}/tmp/worker", e["SM_AGENT_WORKER"], False)
yaml.safe_dump(c, open(dst, "w"), sort_keys=False)
EOF
chown "$SMOKE_USER:" "$YAML"
log "cluster config: $YAML"; cat "$YAML" >&2

# 4. ray up, job, ray down ------------------------------------------------------------------
as_user "ray get-auth-token --generate >/dev/null"
log "ray up"
as_user "timeout $TIMEOUT_UP ray up -y --no-config-cache '$YAML'" || die "ray up failed"

log "ray dashboard (SSH tunnel 127.0.0.1:$TUNNEL_PORT -> head 127.0.0.1:$DASH_PORT)"
runuser -u "$SMOKE_USER" -- env -i HOME="$HOME_DIR" USER="$SMOKE_USER" PATH="$WORK/venv/bin:/usr/bin:/bin" \
  RAY_TMPDIR="$WORK/tmp" bash -c "cd '$REPO' && exec ray dashboard --port $TUNNEL_PORT --remote-port $DASH_PORT '$YAML'" \
  >"$WORK/tunnel.log" 2>&1 &
TUNNEL_PID=$!
for _ in $(seq 60); do
  code="$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$TUNNEL_PORT/api/version" || true)"
  [[ $code == 401 || $code == 200 ]] && break; sleep 1
done
log "tunnel answers HTTP $code without a token"
[[ $code == 401 ]] || die "the dashboard through the tunnel answered $code without a token, expected 401"

JOB_ID="spade-smoke-$RANDOM"
log "ray job submit $JOB_ID"
as_user "timeout $TIMEOUT_JOB ray job submit --address http://127.0.0.1:$TUNNEL_PORT --submission-id $JOB_ID -- \
  python ~/spade_rllib/cluster/standin_tune_job.py --wait-nodes 2 --storage $WORK/tmp/storage" | tee "$WORK/job.log" >&2 \
  || die "job failed"
grep -q "SPADE_TRIAL_NODES" "$WORK/job.log" || die "job printed no trial nodes"
status="$(as_user "curl -s -H \"Authorization: Bearer \$(cat ~/.ray/auth_token)\" http://127.0.0.1:$TUNNEL_PORT/api/jobs/$JOB_ID")"
echo "$status" | grep -q '"status": *"SUCCEEDED"' || die "job API says: $status"
log "job API lists $JOB_ID as SUCCEEDED"
as_user "ray exec '$YAML' 'ray status --address $HEAD_IP:$GCS_PORT'" >&2 || true

kill "$TUNNEL_PID" 2>/dev/null; TUNNEL_PID=""
log "ray down"
as_user "timeout 300 ray down -y '$YAML'" || die "ray down failed"
sleep 3
left="$(user_pids)"
if [[ -n $left ]]; then
  # Expected: the launcher's SSH multiplexing master and the tunnel's ssh. Not Ray.
  log "after ray down, processes of $SMOKE_USER remain (cleanup stops them):"
  ps -o pid=,args= -p "$(echo $left | tr ' ' ',')" | cut -c1-150 >&2 || true
  ray_left="$(ps -o comm= -p "$(echo $left | tr ' ' ',')" | grep -E '^(raylet|gcs_server)$' || true)"
  [[ -z $ray_left ]] || die "Ray processes survived ray down: $ray_left"
fi
RESULT=0
