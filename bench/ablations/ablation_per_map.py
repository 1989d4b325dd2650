"""Per-map held-out scores of the final mains a flagship ablation cached: where each arm wins and loses.

    python bench/ablations/ablation_per_map.py --out-dir <the ablation's --out-dir> [--games 10] [--bots rusher,raider,hybrid]
        [--units pfsp_seed0,...] [--greedy]

Every cached unit (`<out-dir>/units/<arm>_seed<k>.json` and `.pt`, as `UnitCache` keeps them; or only `--units`) is rebuilt from its arm's config
(`flagship_ablation.arm_config` over `tune_configs/flagship.yaml`, with the `--set` overrides the ablation's
manifest recorded) and plays every shipped held-out CTF map against each bot, `--games` per map and seat, actions
sampled (as the ablation scores them). Prints a markdown table of the per-map score (win + draw/2) per arm and
bot, the mean over the arm's seeds, and writes `<out-dir>/per_map.json`. A missing out-dir or unit is refused in
one line before Ray starts. The LAST line is one JSON object: {"bench", "games", "bots", "maps",
"units": {unit: {bot: {map: score}}}, "arms": {arm: {bot: {map: mean over seeds}}}}.
"""
from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from bench.ablations import flagship_ablation as fa
from bench.ablation_common import UnitCache, heldout_paths, ladder_of, local_ray
from spade_rllib.artifacts.atomic_io import write_text

ENV_ID = "CaptureTheFlag-v0"
UNIT = re.compile(r"^(?P<arm>[a-z_]+)_seed(?P<seed>\d+)$")


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out-dir", type=Path, required=True, help="the flagship ablation's --out-dir")
    ap.add_argument("--games", type=int, default=10, help="games per held-out map, seat and bot")
    ap.add_argument("--bots", default="rusher,raider,hybrid", help="comma-separated ladder bots")
    ap.add_argument("--units", default=None, help="comma-separated units (<arm>_seed<k>); default every cached one")
    ap.add_argument("--greedy", action="store_true", help="argmax actions instead of sampled ones")
    args = ap.parse_args(argv)
    manifest_path = args.out_dir / "manifest.json"
    manifest = json.loads(manifest_path.read_text()) if manifest_path.is_file() else {}
    cache = UnitCache(args.out_dir, manifest)
    if not cache.units_dir.is_dir():
        ap.error(f"--out-dir {args.out_dir}: no units/ folder (run bench/ablations/flagship_ablation.py with this --out-dir first)")
    if args.games < 1:
        ap.error(f"--games {args.games}: must be >= 1")
    ladder = ladder_of(ENV_ID)
    bots = [b for b in args.bots.split(",") if b]
    for b in bots:
        if b not in ladder:
            ap.error(f"--bots: unknown bot {b!r} (allowed: {', '.join(ladder)})")
    # a unit is cached when the cache holds both its record and its weights (the record is written last)
    cached = sorted(p.stem for p in cache.units_dir.glob("*_seed*.json")
                    if (m := UNIT.match(p.stem)) and cache.load(m["arm"], int(m["seed"])) is not None)
    units = [u for u in args.units.split(",") if u] if args.units else cached
    for u in units:
        m = UNIT.match(u)
        if m is None or m["arm"] not in fa.ARMS:
            ap.error(f"--units: {u!r} is not <arm>_seed<k> with an arm of {', '.join(fa.ARMS)}")
        if u not in cached:
            ap.error(f"--units: {u} is not cached in {cache.units_dir} (cached: {', '.join(cached) or 'none'})")
    if not units:
        ap.error(f"--out-dir {args.out_dir}: no cached unit")
    return args, cache, units, {b: ladder[b] for b in bots}, list(manifest.get("overrides") or [])


def main(argv=None) -> dict:
    args, cache, units, bots, overrides = parse_args(argv)
    from spade_rllib.config.run_config import parse_config, read_yaml
    from spade_rllib.rllib.algo_config import build_algo_config
    from spade_rllib.rllib.periodic_heldout_eval import play_heldout

    base = read_yaml(fa.DEFAULT_CONFIG.read_text())
    paths = heldout_paths(ENV_ID)
    maps = [Path(p).stem for p in paths]
    per_unit: dict = {}
    with local_ray(1, quiet=True):
        for u in units:
            m = UNIT.match(u)
            raw = fa.arm_config(base, m["arm"], int(m["seed"]), overrides, args.out_dir)
            out = play_heldout(build_algo_config(parse_config(raw)), cache.weights(m["arm"], int(m["seed"])), paths, games=2 * args.games,
                               greedy=args.greedy, opponents=bots)
            per_unit[u] = {b: {mp: round(float(out[f"heldout/{mp}/{b}/score"]), 4) for mp in maps} for b in bots}
            print(f"  [{u}] done", file=sys.stderr, flush=True)
    arms: dict = {}
    for arm in dict.fromkeys(UNIT.match(u)["arm"] for u in units):
        mine = [per_unit[u] for u in units if UNIT.match(u)["arm"] == arm]
        arms[arm] = {b: {mp: round(sum(x[b][mp] for x in mine) / len(mine), 4) for mp in maps} for b in bots}
    print("| arm | bot | " + " | ".join(maps) + " |")
    print("|---|---|" + "---|" * len(maps))
    for arm, table in arms.items():
        for b in bots:
            print(f"| {arm} | {b} | " + " | ".join(f"{table[b][mp]:.2f}" for mp in maps) + " |")
    result = {"bench": "ablation_per_map", "games": args.games, "bots": list(bots), "maps": maps,
              "units": per_unit, "arms": arms}
    write_text(args.out_dir / "per_map.json", json.dumps(result, indent=1))
    print(json.dumps(result))
    return result


if __name__ == "__main__":
    main()
