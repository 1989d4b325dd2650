"""The files of the league exported as one player (`python -m spade_rllib.export --module league:<mode> --out DIR`,
written by `spade_rllib.export.export_league`).

A mixture is not one network, so its export is a directory:

- ``mixture.json``: the mode, the env id, the checkpoint, and every member with its weight and its file:
  ``{"format": "spade_rllib.league_mixture", "version": 1, "module": "league:nash", "mode": "nash",
  "env_id": ..., "members": [{"member": "main_v3", "weight": 0.4, "onnx": "main_v3.onnx"}, ...],
  "how_to_play": ...}``. A member without weights (``random``) has ``"onnx": null``: it plays uniformly over
  the legal actions.
- ``<member>.onnx``: each member with weights, exported as `spade_rllib.export.export_onnx` writes a single
  module (same inputs, outputs and metadata), checked against torch unless ``check`` is False.
- ``average_policy.json`` (OpenSpiel games only): the exact reach-weighted average strategy, one row per
  information state, ``{"game": ..., "num_actions": A, "policy": {info_state_string: [p_0, ..., p_A-1]}}``
  (the strings are OpenSpiel's ``information_state_string``; probabilities over all actions, 0 where illegal).
  This is the mixture as one behaviour strategy: load it into ``pyspiel`` / ``open_spiel.python.policy
  .TabularPolicy`` and its exploitability equals the mixture's.

An export folder belongs to one run: ``mixture.json`` records it (``"run"``: the trial directory of the checkpoint).
`export` refuses to write another run's league into it unless asked to replace it (``--replace``); whenever an
export is written over an earlier one, the earlier one's files that the new one does not write again (its member
ONNX files, its average policy) are removed after the new ``mixture.json`` is in place, so no member of another
export stays beside it.

How the mixture plays (``how_to_play``): draw one member per game with the weights and let it play the whole
game (on an OpenSpiel game the average policy above is the same player, move by move).

``league:average`` (`spade_rllib.players.league_average`) is written in the same form with ONE member, the distilled network
(``league_average.onnx``, weight 1), its own ``how_to_play`` (sample its softmax), ``average_policy.json`` holding the
network's own table, and ``"distilled"``: how it was fitted and, on OpenSpiel games, its exact exploitability beside
the mixture's.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

import numpy as np

from spade_rllib.artifacts.atomic_io import write_text

MIXTURE_FILE = "mixture.json"
AVERAGE_POLICY_FILE = "average_policy.json"
FORMAT = "spade_rllib.league_mixture"
VERSION = 1
HOW_TO_PLAY = ("draw one member per game with probability `weight` and let it play the whole game (argmax or "
               "sampled, as its single-module export); a member with onnx null plays uniformly over the legal "
               "actions")


@dataclass(frozen=True)
class LeagueExport:
    """What `spade_rllib.export.export_league` wrote."""

    out_dir: Path
    members: tuple[dict, ...]
    average_policy: Optional[Path]


def is_league_export(path: str | Path) -> bool:
    """True when `path` is a directory this command wrote (its mixture.json says so)."""
    p = Path(path) / MIXTURE_FILE
    try:
        return json.loads(p.read_text()).get("format") == FORMAT
    except (OSError, ValueError, AttributeError):
        return False


def read_manifest(path: str | Path) -> Optional[dict]:
    """The `mixture.json` of the export folder `path`, or None where there is none this command wrote."""
    try:
        body = json.loads((Path(path) / MIXTURE_FILE).read_text())
    except (OSError, ValueError):
        return None
    return body if isinstance(body, dict) and body.get("format") == FORMAT else None


def run_of(checkpoint: str | Path | None) -> str:
    """The run a checkpoint belongs to: its trial directory (the parent of ``checkpoint_<n>/``), resolved; "" for none."""
    if not checkpoint:
        return ""
    p = Path(checkpoint).expanduser()
    return str((p.parent if p.name.startswith("checkpoint_") else p).resolve())


def export_run(manifest: dict) -> str:
    """The run an earlier export belongs to: its ``"run"``, else (exports before it was recorded) its checkpoint's."""
    return str(manifest.get("run") or run_of(manifest.get("checkpoint")))


def export_files(manifest: dict) -> set[str]:
    """The file names an export wrote into its folder (members' ONNX files, the average policy)."""
    names = {m.get("onnx") for m in manifest.get("members") or [] if isinstance(m, dict)}
    names.add(manifest.get("average_policy"))
    return {n for n in names if isinstance(n, str) and n and Path(n).name == n}


def member_file(member: str) -> str:
    """The ONNX file name of a member (member ids are [A-Za-z0-9_:-]; anything else becomes '_')."""
    return re.sub(r"[^A-Za-z0-9_.-]", "_", member) + ".onnx"


def write_average_policy(game_name: str, table: np.ndarray, path: Path) -> Path:
    """The exact average strategy `table` ([info states, actions], rows in `info_states(game_name)` order) as
    {information state string: probabilities}."""
    from spade_rllib.games.exploitability import info_states

    states = info_states(game_name)
    if table.shape[0] != len(states.keys):
        raise ValueError(f"average policy of {game_name}: {table.shape[0]} rows for {len(states.keys)} information states")
    body = {"game": game_name, "num_actions": int(table.shape[1]),
            "policy": {key: [round(float(p), 9) for p in row] for key, row in zip(states.keys, table)}}
    write_text(path, json.dumps(body) + "\n")
    return path


def read_average_policy(path: str | Path) -> tuple[str, dict[str, list[float]]]:
    """(game name, {information state string: probabilities}) of an `average_policy.json`."""
    body = json.loads(Path(path).read_text())
    return body["game"], body["policy"]


__all__ = ["AVERAGE_POLICY_FILE", "FORMAT", "HOW_TO_PLAY", "LeagueExport", "MIXTURE_FILE", "VERSION", "export_files",
           "export_run", "is_league_export", "member_file", "read_average_policy", "read_manifest", "run_of",
           "write_average_policy"]
