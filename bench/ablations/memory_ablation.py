"""What memory buys on large unseen CaptureTheFlag-v0 maps: the MLP + trail against the LSTM, the memory map,
a wider window or one more level family, with the same curriculum and opponent mix, at equal env steps
(`--env-steps N --minutes <large>`) or equal wall clock, several seeds.

    python bench/ablations/memory_ablation.py [--seeds 2] [--minutes 15] [--setups mlp_trail,lstm_trail,lstm_notrail,mlp_seen_map,mlp_seen_map_conv,mlp_view6,mlp_halls]
        [--games 10] [--env-steps N] [--set KEY=VALUE ...] [--max-map-size N] [--out-dir bench_out/memory] [--cpus 2]
        [--only-seeds K,K] [--max-units K]

Setups (everything else from `ablation_common.base_config`: 1v1 mirror self-play with 10% random,
10% rusher and 10% raider games, the threshold curriculum, 128x128 MLP trunk; `--set` for more):
    mlp_trail      the feed-forward MLP with the decaying trail channel (the current flagship default)
    lstm_trail     the same trunk, one 128-wide hidden layer, then an LSTM of 128 (max_seq_len 32)
    lstm_notrail   the LSTM with the trail channel off (env.kwargs.trail: false): memory alone
    mlp_seen_map   the MLP + trail with the memory map (env.kwargs.seen_map: 7, 7x7 blocks of 3x3 cells of
                   what this agent has seen and where it last saw the opponent: docs/ctf.md); compare it at
                   equal env steps (`--env-steps N --minutes <large>`): each env step costs more with it
    mlp_seen_map_conv  mlp_seen_map with two 3x3 conv layers of 16 over the memory map (agent.model.map_channels)
    mlp_view6      the MLP + trail seeing farther instead of remembering: a 13x13 window (view_radius 6, 9x9 by
                   default), still no oracle
    mlp_halls      the MLP + trail remembering nothing more, training on one more level family: `halls` (uneven
                   rooms, river lines; the shapes of the held-out twin_rooms, crossroads and river) beside the
                   default open, maze and rooms
Each (setup, seed) trains for `--minutes` of wall clock (and at most `--env-steps`). Main's final weights
then play the shipped held-out CTF maps (never trained on) alone against a team that never moves
(navigation), and against every ladder bot (`random`, `rusher`, `raider`, ...), `--games` games per
map and seat, sampling actions as in training (`--greedy`: argmax). The recurrent setups carry one
state per agent and game. Per setup: mean and 95% Student-t interval over seeds, over all maps and per map
(markdown tables printed before the JSON line).

A real measurement needs >= 15 minutes per run and >= 2 seeds: 4 setups x 2 seeds x 15 min plus
evaluation is about 130 minutes of an otherwise idle 2-CPU machine, so it can be spread over sessions:
each finished (setup, seed) unit is cached in `<out-dir>/units/` (`ablation_common.UnitCache`: numbers,
history, main's final weights) and a rerun with the same `--out-dir` trains only the missing ones, e.g.
`--seeds 2 --only-seeds 0` in one session and `--seeds 2` in the next (`--max-units K`: stop after K new
units). `<out-dir>/manifest.json` pins the settings; a rerun that changes one stops with a one-line error
(exit 2) before Ray starts; a different git commit only warns. The LAST line is one JSON object:
{"bench", "env_id", "seeds", "minutes", "setups": {setup: {"ladder": {bot: {mean, low, high, n, values}},
"navigation": {...}, "per_map": {bot or "navigation": {map: {mean, low, high, ...}}}, "iterations": [...],
"env_steps": [...]}}, "winner": {measure: [setups]}, "complete",
"units_done", "units_missing"}, where `winner` names the setups whose interval lies above every other
setup's on that measure; with "complete": false (units missing, listed with the command that continues)
the intervals cover the seeds present.
"""
from __future__ import annotations

import json
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from bench.ablation_common import (
    ablation_parser,
    fmt_interval,
    ladder_navigation_summary,
    ladder_of,
    ladder_runs,
    parse_ablation_args,
    separated,
    setup_raw,
    unit_progress,
)

LSTM_MODEL = {"hidden": [128], "memory": "lstm", "lstm_cell_size": 128, "max_seq_len": 32}
SETUPS: dict[str, dict] = {
    "mlp_trail": {},
    "lstm_trail": {"agent": {"model": LSTM_MODEL}},
    "lstm_notrail": {"agent": {"model": LSTM_MODEL}, "env": {"kwargs": {"trail": False}}},
    "mlp_seen_map": {"env": {"kwargs": {"seen_map": 7}}},
    "mlp_seen_map_conv": {"env": {"kwargs": {"seen_map": 7}}, "agent": {"model": {"map_channels": [16, 16]}}},
    "mlp_view6": {"env": {"kwargs": {"view_radius": 6}}},
    "mlp_halls": {"curriculum": {"uniform": {"families": ["open", "maze", "rooms", "halls"]}}},
}
OPPONENT_MIX = {"random": 0.1, "bot:rusher": 0.1, "bot:raider": 0.1}
CURRICULUM = {"enabled": True, "strategy": "threshold"}


def setup_config(env_id: str, setup: str, seed: int, overrides: list[str]) -> dict:
    return setup_raw(env_id, seed, overrides, {"curriculum": dict(CURRICULUM), "self_play": {"opponent_mix": dict(OPPONENT_MIX)}},
                     SETUPS[setup])


def winners(summary: dict, measures: list[str]) -> dict:
    def get(setup: str, measure: str):
        r = summary[setup]
        return r["navigation"] if measure == "navigation" else r["ladder"][measure.split("/", 1)[1]]

    return {m: [s for s in summary if all(separated(get(s, m), get(o, m)) for o in summary if o != s)] for m in measures}


def per_map_tables(summary: dict) -> str:
    """Markdown: per held-out map, each setup's mean over seeds, one table per measure (navigation, then each bot)."""
    setups = [s for s in summary if summary[s]["per_map"]]
    if not setups:
        return ""
    blocks = []
    for measure in summary[setups[0]]["per_map"]:
        maps = list(summary[setups[0]]["per_map"][measure])
        rows = [f"| {measure} | " + " | ".join(setups) + " |", "|---|" + "---|" * len(setups)]
        for m in maps:
            rows.append(f"| {m} | " + " | ".join(fmt_interval(summary[s]["per_map"][measure][m]) for s in setups) + " |")
        blocks.append("\n".join(rows))
    return "\n\n".join(blocks)


def main(argv=None) -> int:
    ap = ablation_parser(__doc__, kind="setups", names=list(SETUPS), seeds=2, minutes=15.0, games=10,
                         games_help="held-out games per map, seat and opponent", out_dir="memory", bench="memory_ablation",
                         out_help="JSON, units/ (the unit cache) and manifest.json go here")
    args, setups, overrides = parse_ablation_args(ap, argv, "setups", list(SETUPS))
    ladder = list(ladder_of(args.env_id))
    runs = ladder_runs(args, setups, lambda env_id, setup, seed: setup_config(env_id, setup, seed, overrides))
    progress = unit_progress(args, setups, runs, argv)
    summary = {setup: ladder_navigation_summary(rs, ladder) for setup, rs in runs.items()}
    args.out_dir.mkdir(parents=True, exist_ok=True)
    out = {"bench": "memory_ablation", "env_id": args.env_id, "seeds": args.seeds, "minutes": args.minutes,
           "games": args.games, "ladder": ladder, "setups": summary,
           "winner": winners(summary, ["navigation", *(f"ladder/{b}" for b in ladder)]),
           "load_avg": os.getloadavg()[0], **progress}
    (args.out_dir / "memory_ablation.json").write_text(json.dumps(out))
    tables = per_map_tables(summary)
    if tables:
        print(tables, flush=True)
    print(json.dumps(out), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
