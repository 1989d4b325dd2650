"""GIF replays and ASCII transcripts of main's games.

Games are pure functions of their `GameSpec` (see `match_engine.py`), so replays are made after the
evaluation by playing the chosen games again with rendering on: once with the players acting and
a text board per step (the transcript, which also records the actions; the moves only for an env
without a text renderer), once re-enacting those actions with `render_mode="rgb_array"` (the GIF
frames; no GIF for an env that does not render `rgb_array`). The replayed result is checked against
the evaluated one.

Choice of games (`pick_replays`): at least one loss of main when there is one, then its other
games alternating wins, draws and further losses, in schedule order; plus one game on each level
named in `per_level` that has none yet (a loss first, then a draw; `evaluate` names every map of
`LARGE_SIDE` cells a side or more, so each large held-out map has a replay).
"""
from __future__ import annotations

from pathlib import Path
from typing import Sequence

import numpy as np

from spade_rllib.artifacts.atomic_io import atomic_path, write_text
from spade_rllib.evaluation.match_engine import GameResult, GameSpec, LevelEntry, num_actions, play_game, render_modes
from spade_rllib.evaluation.players import PlayerSpec, build_player

GIF_FRAME_MS = 250
GIF_MIN_SIDE = 240
"""Small frames are scaled up (nearest neighbour) to at least this many pixels per side."""
GIF_MAX_SIDE = 360
"""Large frames (connect_four's 774x891) are scaled down to at most this."""


LARGE_SIDE = 15
"""Maps with this many rows or columns or more get a replay each (`large_levels`)."""


def large_levels(levels: Sequence[LevelEntry]) -> list[str]:
    """The ids of the maps with at least `LARGE_SIDE` rows or columns (held-out or a directory, not generated)."""
    return [e.level_id for e in levels if e.level is not None and e.source in ("heldout", "dir")
            and max(getattr(e.level, "height", 0), getattr(e.level, "width", 0)) >= LARGE_SIDE]


def outcome_for(result: GameResult, player: str) -> str:
    return {1.0: "win", 0.5: "draw", 0.0: "loss"}[result.score(player)]


def pick_replays(results: Sequence[GameResult], player: str, k: int, per_level: Sequence[str] = ()) -> list[GameResult]:
    """Up to `k` of `player`'s games: a loss first when there is one, then a mix (see module doc); plus
    one game (a loss, else a draw, else a win) on each level of `per_level` not covered yet."""
    if k <= 0:
        return []
    chosen = _pick(results, player, k)
    rank = {"loss": 0, "draw": 1, "win": 2}
    for level_id in per_level:
        if any(r.level_id == level_id for r in chosen):
            continue
        games = [r for r in results if r.level_id == level_id and player in (r.seat0, r.seat1)]
        if games:
            chosen.append(min(games, key=lambda r: (rank[outcome_for(r, player)], r.index)))
    return sorted(chosen, key=lambda r: r.index)


def _pick(results: Sequence[GameResult], player: str, k: int) -> list[GameResult]:
    mine = [r for r in results if player in (r.seat0, r.seat1)]
    buckets = {o: [r for r in mine if outcome_for(r, player) == o] for o in ("loss", "win", "draw")}
    chosen: list[GameResult] = []
    if buckets["loss"]:
        chosen.append(buckets["loss"].pop(0))
    order = ("win", "draw", "loss")
    while len(chosen) < k and any(buckets.values()):
        for o in order:
            if buckets[o] and len(chosen) < k:
                chosen.append(buckets[o].pop(0))
    return sorted(chosen, key=lambda r: r.index)


def _resize(frame: np.ndarray):
    from PIL import Image

    image = Image.fromarray(np.ascontiguousarray(frame[..., :3]).astype(np.uint8))
    side = min(image.size)
    big = max(image.size)
    if side < GIF_MIN_SIDE:
        factor = int(np.ceil(GIF_MIN_SIDE / side))
        image = image.resize((image.size[0] * factor, image.size[1] * factor), Image.NEAREST)
    elif big > GIF_MAX_SIDE:
        scale = GIF_MAX_SIDE / big
        image = image.resize((max(1, int(image.size[0] * scale)), max(1, int(image.size[1] * scale))), Image.BILINEAR)
    return image


CAPTION_PX = 14
"""Height of the caption bar above each frame (step, captures, carrier)."""


def _captioned(image, caption: str):
    """`image` with a white bar on top holding `caption` in PIL's default font."""
    from PIL import Image, ImageDraw

    out = Image.new("RGB", (image.size[0], image.size[1] + CAPTION_PX), (255, 255, 255))
    out.paste(image, (0, CAPTION_PX))
    ImageDraw.Draw(out).text((3, 1), caption, fill=(20, 20, 20))
    return out


def write_gif(frames: Sequence[np.ndarray], path: Path, frame_ms: int = GIF_FRAME_MS,
              captions: Sequence[str] | None = None) -> Path:
    if not frames:
        raise ValueError(f"no frames to write to {path}")
    images = [_resize(f) for f in frames]
    if captions and any(captions) and len(captions) == len(images):
        images = [_captioned(im, c) for im, c in zip(images, captions)]
    # Hold the last frame a little longer so the end position is visible.
    durations = [frame_ms] * (len(images) - 1) + [frame_ms * 4]
    with atomic_path(path) as tmp:
        images[0].save(tmp, format="GIF", save_all=True, append_images=images[1:], duration=durations, loop=0)
    return path


def write_replays(env_id: str, player_specs: dict[str, PlayerSpec], levels: Sequence[LevelEntry],
                  results: Sequence[GameResult], player: str, k: int, out_dir: Path,
                  setup: dict | None = None, per_level: Sequence[str] = ()) -> list[dict]:
    """Replay `k` of `player`'s games (and one on each level of `per_level`, see `pick_replays`) into
    `out_dir/replays/`; returns one summary dict per replay."""
    chosen = pick_replays(results, player, k, per_level)
    if not chosen:
        return []
    replay_dir = out_dir / "replays"
    replay_dir.mkdir(parents=True, exist_ok=True)
    level_index = {entry.level_id: i for i, entry in enumerate(levels)}
    n_actions = num_actions(env_id, setup)
    rgb = "rgb_array" in render_modes(env_id, setup)  # GIFs where the env renders frames; transcripts always
    summaries = []
    for result in chosen:
        spec = GameSpec(result.index, result.seat0, result.seat1, level_index[result.level_id], result.seed)
        entry = levels[spec.level_index]
        seats = [build_player(player_specs[result.seat0], env_id, n_actions),
                 build_player(player_specs[result.seat1], env_id, n_actions)]
        text_record = play_game(env_id, seats, entry, spec, record="ansi", setup=setup)
        if text_record.result != result:
            raise RuntimeError(f"replay of game {result.index} differs from the evaluated game: "
                               f"{text_record.result} != {result}")
        frames = []
        if rgb:
            frame_record = play_game(env_id, seats, entry, spec, record="rgb_array", actions=text_record.actions,
                                     setup=setup)
            frames, captions = frame_record.frames, frame_record.captions
        outcome = outcome_for(result, player)
        opponent = result.seat1 if result.seat0 == player else result.seat0
        stem = f"game{result.index:05d}_{outcome}"
        gif = write_gif(frames, replay_dir / f"{stem}.gif", captions=captions) if frames else None
        transcript = replay_dir / f"{stem}.txt"
        write_text(transcript, "\n\n".join(text_record.texts) + "\n")
        summaries.append({"index": result.index, "outcome": outcome, "opponent": opponent, "why": result.why(player),
                          "level_id": result.level_id, "gif": f"replays/{gif.name}" if gif else None,
                          "transcript": f"replays/{transcript.name}", "frames": len(frames)})
    return summaries
