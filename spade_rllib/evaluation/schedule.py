"""Levels and the match schedule.

Levels (`--levels`):
- `heldout`: the game's shipped held-out maps (`spade_rllib/levels/heldout/*.txt` for MazeRace,
  `spade_rllib/levels/heldout_ctf/*.txt` for CaptureTheFlag; the curriculum's sets);
- a directory: every `*.txt` in it is one ASCII map (`Level.from_ascii`);
- `generated:N@D`: N levels from the game's generator (its `GameSpec.level_generator`) at
  `knobs_for_difficulty(D)`, seeds derived
  from `--seed`, e.g. `generated:8@5` (2v2 with `--agents-per-team 2`; maps with two spawns per
  team play 2v2 by themselves, each team's agents driven by that seat's player).
Envs without levels (connect_four) play one built-in board whatever `--levels` says.

Schedule: every pair of the pool plays `games_per_pair` games (rounded up to even), half with each
player in seat 0, cycling through the levels in seat-swapped pairs (both seatings see the same
levels). When the pool is larger than `max_round_robin`, a sampled schedule keeps every pair that
involves an anchor player (each run's main and the bots) and adds `sampled_opponents` random
opponents for every other player, drawn from a generator seeded by `seed`. Game seeds come from
`SeedSequence([seed, game_index])` (the two seatings of a level share one), so results do not depend on how games are spread over workers.

Role games (`make_role_schedule`): seats are fixed by role (seat k plays the k-th role), so there is no
seat swap; each role's main plays `games_per_pair` games against every player of the other role.
"""
from __future__ import annotations

import itertools
import re
from pathlib import Path
from typing import Sequence

import numpy as np

from spade_rllib.evaluation.match_engine import LevelEntry, GameSpec
from spade_rllib.games import game, heldout_dir, is_level_game, level_game_for

HELDOUT = "heldout"
GENERATED_RE = re.compile(r"^generated:(\d+)@(\d+(?:\.\d+)?)$")
LEVEL_SUFFIX = ".txt"


MAX_GENERATED_LEVELS = 1000
"""Most levels `--levels generated:N@D` builds (each is generated and validated up front)."""


DEFAULT_LEVELS = "generated:4@5"
"""Used when `--levels` is not given and the package holds no held-out maps."""


class ScheduleError(ValueError):
    """A bad `--levels` or schedule argument; one-line message."""


def _load_dir(directory: Path, source: str, env_id: str) -> list[LevelEntry]:
    from spade_rllib.envs import Level

    files = sorted(directory.glob("*" + LEVEL_SUFFIX))
    if not files:
        raise ScheduleError(f"--levels: no *{LEVEL_SUFFIX} maps in {directory}")
    out = []
    for file in files:
        try:
            level = Level.from_ascii(file.read_text())
        except ValueError as e:
            raise ScheduleError(f"--levels: {file}: {e}") from e
        kind = level_game_for(level)  # a map holds an F flag (MazeRace) or a/b bases (CTF)
        if kind != env_id:
            raise ScheduleError(f"--levels: {file}: a {kind} map, but the game is {env_id}")
        difficulty = level.meta.get("difficulty") if level.meta else None
        out.append(LevelEntry(file.stem, level, source, difficulty, f"{level.height}x{level.width}"))
    return out


def parse_levels(spec: str | None, env_id: str, seed: int, agents_per_team: int = 1) -> list[LevelEntry]:
    """Resolve `--levels` into level entries (see module docstring)."""
    if not is_level_game(env_id):
        return [LevelEntry("board", None, "builtin")]
    try:
        shipped = heldout_dir(env_id)
    except ValueError:
        shipped = Path(DEFAULT_LEVELS)  # a level game without shipped maps: generated levels
    if spec is None:
        spec = HELDOUT if any(shipped.glob("*" + LEVEL_SUFFIX)) else DEFAULT_LEVELS
    if spec == HELDOUT:
        if not shipped.is_dir() or not any(shipped.glob("*" + LEVEL_SUFFIX)):
            raise ScheduleError(f"--levels heldout: no held-out maps in {shipped}")
        return _load_dir(shipped, "heldout", env_id)
    match = GENERATED_RE.match(spec)
    if match:
        from spade_rllib.envs import knobs_for_difficulty

        generate_level = game(env_id).level_generator

        count, difficulty = int(match.group(1)), float(match.group(2))
        if not 1 <= count <= MAX_GENERATED_LEVELS:
            raise ScheduleError(f"--levels {spec}: N = {count}: out of range, allowed 1..{MAX_GENERATED_LEVELS}")
        if not 1.0 <= difficulty <= 10.0:
            raise ScheduleError(f"--levels {spec}: difficulty must be in [1, 10]")
        knobs = knobs_for_difficulty(difficulty, agents_per_team=agents_per_team)
        seeds = np.random.SeedSequence([int(seed), 0x1E7E1]).generate_state(count)
        out = []
        for i, level_seed in enumerate(seeds):
            level = generate_level(knobs, int(level_seed))
            suffix = f"_{agents_per_team}v{agents_per_team}" if agents_per_team != 1 else ""
            out.append(LevelEntry(f"gen{i:03d}_d{difficulty:g}{suffix}", level, "generated", difficulty,
                                  f"{level.height}x{level.width}"))
        return out
    path = Path(spec).expanduser()
    if path.is_dir():
        return _load_dir(path, "dir", env_id)
    if spec.startswith("generated"):
        raise ScheduleError(f"--levels {spec!r}: expected generated:N@DIFFICULTY, e.g. generated:8@5")
    raise ScheduleError(
        f"--levels {spec!r}: not 'heldout', not a directory, not generated:N@DIFFICULTY (e.g. generated:8@5)")


def game_seed(seed: int, index: int) -> int:
    return int(np.random.SeedSequence([int(seed), int(index)]).generate_state(1)[0])


def select_pairs(players: Sequence[str], anchors: Sequence[str], seed: int, max_round_robin: int,
                 sampled_opponents: int) -> list[tuple[str, str]]:
    """All pairs (round robin), or the sampled subset for a large pool; pairs as (i < j) in pool order."""
    order = {p: i for i, p in enumerate(players)}
    all_pairs = list(itertools.combinations(players, 2))
    if len(players) <= max_round_robin:
        return all_pairs
    rng = np.random.default_rng(np.random.SeedSequence([int(seed), 0x5C4ED]))
    anchor_set = set(anchors)
    chosen = {pair for pair in all_pairs if pair[0] in anchor_set or pair[1] in anchor_set}
    for player in players:
        if player in anchor_set:
            continue
        others = [p for p in players if p != player]
        picks = rng.choice(len(others), size=min(sampled_opponents, len(others)), replace=False)
        for k in sorted(picks):
            a, b = sorted((player, others[k]), key=order.__getitem__)
            chosen.add((a, b))
    return sorted(chosen, key=lambda pr: (order[pr[0]], order[pr[1]]))


def make_schedule(players: Sequence[str], levels: Sequence[LevelEntry], games_per_pair: int, seed: int, *,
                  anchors: Sequence[str] = (), max_round_robin: int = 16,
                  sampled_opponents: int = 4) -> list[GameSpec]:
    """The games to play, in a fixed order (see module docstring)."""
    if games_per_pair < 1:
        raise ScheduleError(f"--games-per-pair = {games_per_pair}: must be >= 1")
    if len(players) < 2:
        raise ScheduleError(f"the pool has {len(players)} player(s); evaluation needs at least 2")
    if len(set(players)) != len(players):
        raise ScheduleError(f"player ids are not unique: {list(players)}")
    per_pair = games_per_pair + (games_per_pair % 2)
    pairs = select_pairs(players, anchors, seed, max_round_robin, sampled_opponents)
    games: list[GameSpec] = []
    for pair_index, (a, b) in enumerate(pairs):
        for k in range(per_pair):
            level_index = (pair_index + k // 2) % len(levels)
            seat0, seat1 = (a, b) if k % 2 == 0 else (b, a)
            index = len(games)
            duo_first = index - (k % 2)  # both seatings of a level share one seed
            games.append(GameSpec(index, seat0, seat1, level_index, game_seed(seed, duo_first)))
    return games


def make_role_schedule(players_by_role: dict[str, Sequence[str]], mains: dict[str, str], games_per_pair: int,
                       seed: int) -> list[GameSpec]:
    """A role game's games (see module docstring): `players_by_role` in seat order (two roles), `mains`
    {role: its main's player id}. Each pair once (the two mains meet in one set of games)."""
    if games_per_pair < 1:
        raise ScheduleError(f"--games-per-pair = {games_per_pair}: must be >= 1")
    roles = list(players_by_role)
    if len(roles) != 2:
        raise ScheduleError(f"a role game's schedule needs two roles, got {', '.join(roles)}")
    pairs: list[tuple[str, str]] = []
    for k, role in enumerate(roles):
        for opponent in players_by_role[roles[1 - k]]:
            pair = (mains[role], opponent) if k == 0 else (opponent, mains[role])
            if pair not in pairs:
                pairs.append(pair)
    games: list[GameSpec] = []
    for seat0, seat1 in pairs:
        for _ in range(games_per_pair):
            index = len(games)
            games.append(GameSpec(index, seat0, seat1, 0, game_seed(seed, index)))
    return games
