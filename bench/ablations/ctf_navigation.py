"""Which held-out CTF map sizes a trained policy navigates: main's score per map against `random`
(pure navigation: random never defends) and `rusher` (navigation plus defence), for one or more
finished runs (e.g. the trail channel on and off).

    python bench/ablations/ctf_navigation.py --trial results/quickstart/<trial> --trial <other trial> [--games 20]

Each run is played with its own resolved config (`config.yaml` in the trial dir: env kwargs such as
`trail` apply) and its newest checkpoint's `main`, on the shipped held-out maps
(`spade_rllib/levels/heldout_ctf`, 9x9 to 21x21), seats alternating, sampling actions as in
training (`--greedy` for argmax). Prints a table per run; the last line is JSON
{label: {map: {opponent: score}}}.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))  # run from a checkout without installing

OPPONENTS = {"random": "random", "rusher": "bot:rusher"}


def play_run(trial: Path, games: int, greedy: bool) -> dict:
    from ray.rllib.core.rl_module.rl_module import RLModule

    from spade_rllib.artifacts.checkpoint_layout import RUN_CONFIG_FILE, module_dir
    from spade_rllib.config.run_config import load_config
    from spade_rllib.games import heldout_dir
    from spade_rllib.core.outcome import MAIN
    from spade_rllib.rllib.algo_config import build_algo_config
    from spade_rllib.rllib.periodic_heldout_eval import play_heldout
    from spade_rllib.train import find_checkpoint

    cfg = load_config(str(trial / RUN_CONFIG_FILE))
    cfg.evaluation.heldout_levels = []  # this bench picks the maps
    weights = RLModule.from_checkpoint(str(module_dir(find_checkpoint(str(trial)), MAIN))).get_state()
    out = play_heldout(build_algo_config(cfg), weights, [str(heldout_dir(cfg.env.id))], games, greedy, OPPONENTS)
    return {"trail": bool(cfg.env.kwargs.get("trail", True)), "metrics": out}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--trial", action="append", required=True, help="a finished run's trial directory (repeatable)")
    p.add_argument("--label", action="append", default=None, help="a label per --trial (default: trail on/off)")
    p.add_argument("--games", type=int, default=20, help="games per map and opponent")
    p.add_argument("--greedy", action="store_true")
    args = p.parse_args(argv)
    from spade_rllib.curriculum.heldout_maps import load_heldout_levels
    from spade_rllib.games import CTF_ID, heldout_dir

    levels = load_heldout_levels([heldout_dir(CTF_ID)])
    order = sorted(levels, key=lambda n: (levels[n].height * levels[n].width, n))
    summary = {}
    for i, trial in enumerate(args.trial):
        run = play_run(Path(trial), args.games, args.greedy)
        label = args.label[i] if args.label else f"trail {'on' if run['trail'] else 'off'}"
        m = run["metrics"]
        summary[label] = {name: {opp: round(m[f"heldout/{name}/{opp}/score"], 3) for opp in OPPONENTS} for name in order}
        print(f"\n{label} ({trial}), score = win + draw/2 over {args.games} games per map and opponent")
        print(f"{'map':<12} {'size':>6} " + " ".join(f"{o:>8}" for o in OPPONENTS))
        for name in order:
            size = f"{levels[name].height}x{levels[name].width}"
            print(f"{name:<12} {size:>6} " + " ".join(f"{summary[label][name][o]:8.3f}" for o in OPPONENTS))
    print(json.dumps(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
