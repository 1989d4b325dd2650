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

How the mixture plays (``how_to_play``): draw one member per game with the weights and let it play the whole
game (on an OpenSpiel game the average policy above is the same player, move by move).
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

import numpy as np

from spade_rllib.atomic_io import write_text

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


__all__ = ["AVERAGE_POLICY_FILE", "FORMAT", "HOW_TO_PLAY", "LeagueExport", "MIXTURE_FILE", "VERSION", "is_league_export",
           "member_file", "read_average_policy", "write_average_policy"]
