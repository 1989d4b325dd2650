"""League evaluation from checkpoints: `python -m spade_rllib.evaluate --checkpoint PATH [...]`.

Builds a pool (every league member stored in each checkpoint, the scripted bots, and with
`--vs-checkpoint` other runs' main), plays a round-robin (or sampled) schedule with seats swapped
equally on the chosen levels, in parallel Ray tasks or in this process (`--workers 0`), and writes
to `--out`: games.csv, payoff.csv, ratings.csv, levels.csv, PNG plots, report.md and replays.
Deterministic given `--seed`. A role game's run (modules `main_<role>`, two roles) is evaluated per role:
each role's main plays the other role's main, snapshots and bots, seated by role, with payoff and
ratings tables per role. A free-for-all of more than two teams is not evaluated. See docs/evaluation.md.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Sequence

from spade_rllib.artifacts.atomic_io import write_text
from spade_rllib.artifacts.checkpoint_layout import checkpoint_env_id, checkpoint_env_setup, resolve_checkpoint
from spade_rllib.cli import add_debug_flag, cli_entry
from spade_rllib.games import canonical_env_id, game_ids
from spade_rllib.games.roles import role_module_id, role_names, role_of_module
from spade_rllib.players.policy import (
    DEFAULT_MODULE_ID,
    PolicyLoadError,
    infer_env_id,
    known_env_id,
    load_policy,
)

EXIT_USAGE = 2


@dataclass
class EvalConfig:
    """Everything one evaluation needs; filled from the command line by `parse_args`."""

    checkpoints: list[str]
    """Runs whose league members (main, exploiters, frozen snapshots) join the pool."""
    vs_checkpoints: list[str] = field(default_factory=list)
    """Other runs whose main joins the pool, for cross-run comparison."""
    levels: str | None = None
    """"heldout", a directory of ASCII maps, or "generated:N@D"; default heldout, else generated:4@5."""
    games_per_pair: int = 10
    """Games per pair of players (rounded up to even: seats are swapped equally)."""
    seed: int = 0
    """Seeds levels, schedule, games, bootstrap: the same seed gives the same files."""
    replays: int = 2
    """GIF replays + ASCII transcripts of main's games (at least one loss when there is one)."""
    out: str = "eval"
    """Output directory: a new (or empty) one, unless `force`."""
    force: bool = False
    """Write into an existing, non-empty `out` (its files of the same names are replaced)."""
    workers: int = 2
    """Parallel Ray tasks; 0 plays every game in this process without Ray."""
    env: str | None = None
    """Env id override; by default the env recorded in the checkpoint (or inferred from its spaces)."""
    bots: list[str] | None = None
    """Scripted players to add; default: the game's default bots (`default_bot_names(env_id)`: CTF's ladder,
    MazeRace's three, connect four's bots but the slow `mcts1000`), random otherwise."""
    league: bool = True
    """Include frozen league snapshots stored in the checkpoints (False: main only)."""
    bootstrap: int = 200
    """Bootstrap resamples for the Elo intervals."""
    max_round_robin: int = 16
    """Pools larger than this get a sampled schedule."""
    sampled_opponents: int = 4
    """Sampled schedule: random opponents per non-anchor player."""
    agents_per_team: int = 1
    """Generated levels of a level game: 1 (1v1) or 2 (2v2; each seat's player drives its whole team)."""
    stochastic: bool = False
    """Module players sample from their policy instead of taking the argmax."""
    progress: bool = True
    """Show a progress bar."""
    top: int = 10
    """Rows of the ratings table printed to the console."""
    league_players: list[str] = field(default_factory=list)
    """Mixtures of each checkpoint's league that join the pool as one player each: "uniform", "plan", "nash", or
    "average" (one distilled network) (player id ``league:<mode>``; `spade_rllib.players.league_player`)."""
    exploitability: bool = False
    """OpenSpiel games: print the exact exploitability of main, every member and each league mixture; no games."""
    # Derived, filled by `build_pool`:
    env_id: str = ""
    """The env every player plays (resolved)."""
    main_id: str = ""
    """Player id of the first checkpoint's main (levels.csv and replays are about it)."""
    env_setup: dict = field(default_factory=dict)
    """How the first run built an env of another package (its config.yaml's env.kwargs, teams, mode, api;
    in a role game also "roles": {agent: role})."""
    player_roles: dict = field(default_factory=dict)
    """Role games: {player_id: role}; empty for a game of two teams."""


def parse_args(argv: Sequence[str] | None = None) -> EvalConfig:
    p = argparse.ArgumentParser(prog="python -m spade_rllib.evaluate", description=__doc__.split("\n")[0])
    p.add_argument("--checkpoint", action="append", required=True, dest="checkpoints", metavar="PATH",
                   help="algorithm checkpoint or trial directory (repeatable)")
    p.add_argument("--vs-checkpoint", action="append", default=[], dest="vs_checkpoints", metavar="PATH",
                   help="another run whose main joins the pool (repeatable)")
    p.add_argument("--levels", default=None, help="heldout | DIR | generated:N@DIFFICULTY")
    p.add_argument("--games-per-pair", type=int, default=10)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--replays", type=int, default=2, metavar="K")
    p.add_argument("--out", default="eval", help="output directory (new or empty, unless --force)")
    p.add_argument("--force", action="store_true", help="write into an existing non-empty --out")
    p.add_argument("--workers", type=int, default=min(2, os.cpu_count() or 1),
                   help="parallel Ray tasks (0: no Ray, play in this process)")
    p.add_argument("--local", action="store_const", const=0, dest="workers", help="same as --workers 0")
    p.add_argument("--env", default=None, help="env id override (default: the env.id in the run's config.yaml)")
    p.add_argument("--bots", default=None, help="comma-separated bots to add, or 'none' (default: the game's "
                   "default bots)")
    p.add_argument("--no-league", action="store_false", dest="league", help="main only, no frozen snapshots")
    p.add_argument("--bootstrap", type=int, default=200)
    p.add_argument("--max-round-robin", type=int, default=16)
    p.add_argument("--sampled-opponents", type=int, default=4)
    p.add_argument("--agents-per-team", type=int, choices=(1, 2), default=1,
                   help="generated levels of a level game: 1v1 or 2v2")
    p.add_argument("--stochastic", action="store_true", help="sample actions instead of argmax")
    p.add_argument("--no-progress", action="store_false", dest="progress")
    p.add_argument("--top", type=int, default=10)
    p.add_argument("--league-player", action="append", default=[], dest="league_players", metavar="MODE",
                   choices=("uniform", "plan", "nash", "average"),
                   help="add the league as one player, league:MODE (repeatable): its members weighted 'uniform'ly "
                        "(fictitious play), by main's matchmaking 'plan', or by the 'nash' equilibrium of their payoff "
                        "matrix; poker: the exact averaged strategy, other games: a member drawn per game; 'average': "
                        "one network distilled from the uniform mixture (spade_rllib.players.league_average; play it with "
                        "--stochastic)")
    p.add_argument("--exploitability", action="store_true",
                   help="OpenSpiel games (kuhn_poker, leduc_poker, openspiel:<name>): print the exact exploitability "
                        "(NashConv/2) of main, every league member and league:uniform|plan|nash|average, then exit (no games)")
    add_debug_flag(p)
    args = p.parse_args(argv)
    bots = None
    if args.bots is not None:
        bots = [] if args.bots.strip().lower() == "none" else [b.strip() for b in args.bots.split(",") if b.strip()]
    cfg = EvalConfig(checkpoints=args.checkpoints, vs_checkpoints=args.vs_checkpoints, levels=args.levels,
                     games_per_pair=args.games_per_pair, seed=args.seed, replays=args.replays, out=args.out, force=args.force,
                     workers=args.workers, env=args.env, bots=bots, league=args.league, bootstrap=args.bootstrap,
                     max_round_robin=args.max_round_robin, sampled_opponents=args.sampled_opponents,
                     agents_per_team=args.agents_per_team, stochastic=args.stochastic, progress=args.progress, top=args.top,
                     league_players=list(dict.fromkeys(args.league_players)), exploitability=args.exploitability)
    if not cfg.exploitability:  # --exploitability plays no game and writes nothing
        validate(cfg)
    return cfg


LIMITS = {"games_per_pair": (1, 10_000), "bootstrap": (1, 100_000), "max_round_robin": (1, 256),
          "sampled_opponents": (1, 256), "replays": (0, 100), "workers": (0, 4096), "top": (0, 100_000)}
"""(lowest, highest) of every count that sizes an evaluation's work."""


def validate(cfg: EvalConfig) -> None:
    """Argument checks before anything is loaded; `ValueError` naming the option and the value."""
    for name, (lo, hi) in LIMITS.items():
        value = getattr(cfg, name)
        if not lo <= value <= hi:
            raise ValueError(f"--{name.replace('_', '-')} = {value}: out of range, allowed {lo}..{hi}")
    from spade_rllib.artifacts.output_paths import check_fresh_directory, check_not_in_checkpoint, check_output_path

    check_output_path(cfg.out, "--out", directory=True)  # before minutes of games, not after
    check_not_in_checkpoint(cfg.out, "--out")
    check_fresh_directory(cfg.out, "--out", cfg.force)


# --------------------------------------------------------------------------------------------
# Pool
# --------------------------------------------------------------------------------------------
def _run_label(info, taken: set[str]) -> str:
    """Short unique name of a run: its trial folder, plus the checkpoint folder when one run appears twice."""
    base = ((info.trial_dir.name if info.trial_dir else info.path.name) or "run")[:24]
    label = base
    if label in taken:
        label = f"{base}@{info.path.name}"
    k = 2
    while label in taken:
        label, k = f"{base}-{k}", k + 1
    taken.add(label)
    return label


def _members(info, league: bool) -> list[str]:
    """League members of one checkpoint: main, exploiters and (with `league`) frozen snapshots."""
    members = [m for m in info.module_ids if m == DEFAULT_MODULE_ID or "exploiter" in m]
    if not members:
        members = list(info.module_ids)
    if league:
        members += [m for m in info.league_ids if m not in members]
    return members


def build_pool(cfg: EvalConfig):
    """Resolve checkpoints, env and players. Returns {player_id: PlayerSpec} in pool order and a legend."""
    from spade_rllib.evaluation.players import BOT_KIND, MODULE_KIND, PlayerSpec, bots_for_env, default_bots_for_env

    entries = []  # (checkpoint info, members, is_vs)
    for path in cfg.checkpoints:
        info = resolve_checkpoint(path)
        entries.append((info, _members(info, cfg.league), False))
    if is_role_run(entries[0][0]):
        if len(entries) > 1 or cfg.vs_checkpoints:
            raise PolicyLoadError(f"{entries[0][0].path} is a role game's run (modules "
                                  f"{', '.join(entries[0][0].module_ids)}): evaluate it alone, without "
                                  "--vs-checkpoint or a second --checkpoint")
        return build_role_pool(cfg, entries[0][0])
    for path in cfg.vs_checkpoints:
        info = resolve_checkpoint(path)
        if DEFAULT_MODULE_ID not in info.module_ids:
            raise PolicyLoadError(f"--vs-checkpoint {info.path} has no 'main' module; available: "
                                  f"{', '.join(info.module_ids) or 'none'}")
        entries.append((info, [DEFAULT_MODULE_ID], True))
    recorded = checkpoint_env_id(entries[0][0])
    setup = checkpoint_env_setup(entries[0][0])
    env_id = playable_env_id(cfg.env, [info for info, _, _ in entries],
                             lambda: load_policy(entries[0][0].path, entries[0][1][0]),
                             setup=setup if cfg.env is None or canonical_env_id(cfg.env) == recorded else {})
    cfg.env_setup = setup if recorded is not None and canonical_env_id(recorded) == env_id else {}
    multi = len(entries) > 1
    taken: set[str] = set()
    specs: dict[str, PlayerSpec] = {}
    legend: dict[str, str] = {}
    for info, members, is_vs in entries:
        label = _run_label(info, taken)
        legend[label] = str(info.path)
        for member in [*members, *(f"league:{mode}" for mode in ([] if is_vs else cfg.league_players))]:
            load_policy(info.path, member, env_id=env_id)  # validates now: one-line errors before any game
            pid = f"{label}/{member}" if multi else member
            specs[pid] = PlayerSpec(pid, MODULE_KIND, member, checkpoint=str(info.path), run=label,
                                    deterministic=not cfg.stochastic)
    valid_bots = bots_for_env(env_id)
    bots = list(default_bots_for_env(env_id)) if cfg.bots is None else cfg.bots
    for bot in bots:
        if bot not in valid_bots:
            raise PolicyLoadError(f"--bots: {bot!r} does not play {env_id}; available: {', '.join(valid_bots)}")
        if bot in specs:
            raise PolicyLoadError(f"player id {bot!r} is taken by a module; drop it from --bots")
        specs[bot] = PlayerSpec(bot, BOT_KIND, bot)
    first_label = next(iter(legend))
    cfg.env_id = env_id
    cfg.main_id = f"{first_label}/{entries[0][1][0]}" if multi else entries[0][1][0]
    return specs, legend


def is_role_run(info) -> bool:
    """A role game's checkpoint: modules ``main_<role>`` and no ``main``."""
    return DEFAULT_MODULE_ID not in info.module_ids and any(role_of_module(m) for m in info.module_ids)


def build_role_pool(cfg: EvalConfig, info):
    """The pool of a role game's run: per role its main, its frozen snapshots (with `cfg.league`) and the
    bots (``<bot>_<role>``). Fills `cfg.env_id`, `cfg.env_setup` (with "roles"), `cfg.player_roles`,
    `cfg.main_id` (the first role's main). Returns ({player_id: PlayerSpec}, legend)."""
    from spade_rllib.artifacts.checkpoint_layout import checkpoint_env_roles, member_module
    from spade_rllib.evaluation.match_engine import make_game_env
    from spade_rllib.evaluation.players import (BOT_KIND, MODULE_KIND, PlayerSpec,
                                                bots_for_env, default_bots_for_env)
    from spade_rllib.games.roles import game_roles
    from spade_rllib.core.validation import ConfigError

    mains = [m for m in info.module_ids if role_of_module(m)]
    recorded = checkpoint_env_id(info)
    setup = checkpoint_env_setup(info)
    env_id = playable_env_id(cfg.env, [info], lambda: load_policy(info.path, mains[0]), seats_by_role=True)
    if recorded is None or canonical_env_id(recorded) != env_id:
        setup = {}
    game = make_game_env(env_id, setup=setup)
    try:
        agent_roles = game_roles(game, checkpoint_env_roles(info) if setup else None, env_id)
    except ConfigError as e:
        raise PolicyLoadError(f"{info.path}: {e}") from e
    names = role_names(agent_roles)
    if sorted(role_module_id(r) for r in names) != sorted(mains):
        raise PolicyLoadError(f"{info.path} holds {', '.join(mains)}, but {env_id} has "
                              f"{'roles ' + ', '.join(names) if names else 'no roles'}; pass the run's --env")
    if len(names) != 2:
        raise PolicyLoadError(f"{env_id} has roles {', '.join(names)}; evaluation plays role games of two roles "
                              "(two seats)")
    valid_bots = bots_for_env(env_id)
    bots = list(default_bots_for_env(env_id)) if cfg.bots is None else cfg.bots
    for bot in bots:
        if bot not in valid_bots:
            raise PolicyLoadError(f"--bots: {bot!r} does not play {env_id}; available: {', '.join(valid_bots)}")
    label = (info.trial_dir.name if info.trial_dir else info.path.name) or "run"
    specs: dict[str, PlayerSpec] = {}
    player_roles: dict[str, str] = {}
    for role in names:
        main = role_module_id(role)
        agent = next(a for a in game.agents if agent_roles[a] == role)
        features, _, actions = game.agent_shape(agent)
        members = [main] + ([m for m in info.league_ids if member_module(m) == main] if cfg.league else [])
        for member in members:
            policy = load_policy(info.path, member)  # validates now: one-line errors before any game
            if (policy.feature_size, policy.num_actions) != (features, actions):
                raise PolicyLoadError(f"{member} of {info.path} observes {policy.feature_size} features with "
                                      f"{policy.num_actions} actions; role {role!r} of {env_id} has {features} and {actions}")
            specs[member] = PlayerSpec(member, MODULE_KIND, member, checkpoint=str(info.path), run=label,
                                       deterministic=not cfg.stochastic)
            player_roles[member] = role
        for bot in bots:
            pid = f"{bot}_{role}"
            specs[pid] = PlayerSpec(pid, BOT_KIND, bot)
            player_roles[pid] = role
    close = getattr(game.raw_env, "close", None)
    if callable(close):
        close()
    cfg.env_id = env_id
    cfg.env_setup = {**setup, "roles": dict(agent_roles)}
    cfg.player_roles = player_roles
    cfg.main_id = role_module_id(names[0])
    return specs, {label: str(info.path)}


def playable_env_id(override: str | None, infos: Sequence, first_policy, setup: dict | None = None,
                    seats_by_role: bool = False) -> str:
    """The env the checkpoints were trained on: `override` (``--env``), else the id their run records
    (`config.yaml`, `spade_meta.json`, ...), else the catalog game whose spaces fit `first_policy()`.
    `PolicyLoadError` (one line) for an id that names nothing, runs of different envs, or an env the
    match engine cannot seat (not two teams; `seats_by_role`: a role game, seated by role, not by team)."""
    from spade_rllib.evaluation.match_engine import MatchError, check_two_teams
    from spade_rllib.games import EnvIdError, resolve_env

    env_id = canonical_env_id(override)
    recorded: set = set()
    if env_id is not None:
        try:
            resolve_env(env_id)
        except EnvIdError as e:
            raise PolicyLoadError(f"--env {override!r}: {e}") from e
    else:
        recorded = {checkpoint_env_id(info) for info in infos} - {None}
        known = {e for e in (known_env_id(r) for r in recorded) if e}
        if len(known) > 1:
            raise PolicyLoadError(f"checkpoints come from different envs: {', '.join(sorted(known))}; "
                                  f"evaluate one env at a time")
        env_id = known.pop() if known else None
    if env_id is None:  # nothing recorded, or a name that builds nothing here (a private register_env name)
        env_id = infer_env_id(first_policy())
        if env_id is None:
            said = f"its run records {', '.join(map(repr, sorted(recorded)))}, which builds no env here" if recorded \
                else "its run records no env id"
            raise PolicyLoadError(f"cannot tell which env {infos[0].path} was trained on: {said}, and its spaces fit "
                                  f"no game of {', '.join(game_ids())}; pass --env")
    if seats_by_role:
        return env_id
    try:
        check_two_teams(env_id, setup=setup)
    except MatchError as e:
        raise PolicyLoadError(f"{e}; a free-for-all of more than two teams is not evaluated (train it with "
                              "env.teams of two teams, or roles)" if "teams" in str(e) else str(e)) from e
    return env_id


# --------------------------------------------------------------------------------------------
# Run
# --------------------------------------------------------------------------------------------
def evaluate(cfg: EvalConfig) -> dict:
    """Run the whole evaluation and write every output; returns a summary dict (paths and tables)."""
    from spade_rllib.evaluation import eval_report as report
    from spade_rllib.evaluation.replays import large_levels, write_replays
    from spade_rllib.evaluation.schedule_runner import run_schedule
    from spade_rllib.evaluation.schedule import make_schedule, parse_levels

    started = time.perf_counter()
    specs, legend = build_pool(cfg)
    levels = parse_levels(cfg.levels, cfg.env_id, cfg.seed, cfg.agents_per_team)
    players = list(specs)
    roles = role_names(cfg.player_roles)
    if roles:  # seated by role: each role's main against the other role's players
        from spade_rllib.evaluation.schedule import make_role_schedule

        by_role = {r: [p for p in players if cfg.player_roles[p] == r] for r in roles}
        games = make_role_schedule(by_role, {r: role_module_id(r) for r in roles}, cfg.games_per_pair, cfg.seed)
    else:
        anchors = [p for p, s in specs.items() if s.kind == "bot" or s.name == DEFAULT_MODULE_ID]
        games = make_schedule(players, levels, cfg.games_per_pair, cfg.seed, anchors=anchors,
                              max_round_robin=cfg.max_round_robin, sampled_opponents=cfg.sampled_opponents)
    out = Path(cfg.out)
    out.mkdir(parents=True, exist_ok=True)
    results = run_schedule(cfg.env_id, specs, levels, games, workers=cfg.workers, progress=cfg.progress,
                           setup=cfg.env_setup)
    play_s = time.perf_counter() - started

    payoff = report.payoff_from_results(players, results)
    ratings = report.fit_ratings(players, results, n_bootstrap=cfg.bootstrap, seed=cfg.seed)
    kinds = {p: ("bot" if s.kind == "bot" else f"module:{s.name}") for p, s in specs.items()}
    if roles:
        kinds = {p: f"{k} ({cfg.player_roles[p]})" for p, k in kinds.items()}
    rating_rows = report.ratings_rows(ratings, payoff, kinds)
    focal = [role_module_id(r) for r in roles] if roles else [cfg.main_id]
    level_rows = [row for player in focal for row in report.level_rows(player, levels, results)]
    files = {
        "games": report.write_csv(out / "games.csv", report.GAMES_COLUMNS, (r.to_row() for r in results)),
        "payoff": report.write_csv(out / "payoff.csv", report.PAYOFF_COLUMNS, report.payoff_rows(payoff)),
        "ratings": report.write_csv(out / "ratings.csv", report.RATINGS_COLUMNS, rating_rows),
        "levels": report.write_csv(out / "levels.csv", report.LEVELS_COLUMNS, level_rows),
    }
    reason_rows = [row for player in focal for row in report.reason_rows(player, levels, results)]
    if reason_rows:  # CaptureTheFlag: why main lost or drew, per level
        files["reasons"] = report.write_csv(out / "reasons.csv", report.REASON_COLUMNS, reason_rows)
    role_tables: dict[str, list[dict]] = {}
    for role in roles:  # per role: its players' ratings (one fit over every game) and payoffs
        role_tables[role] = [{**row, "rank": rank} for rank, row in
                             enumerate((r for r in rating_rows if cfg.player_roles[r["player"]] == role), start=1)]
        files[f"ratings_{role}"] = report.write_csv(out / f"ratings_{role}.csv", report.RATINGS_COLUMNS,
                                                    role_tables[role])
        files[f"payoff_{role}"] = report.write_csv(out / f"payoff_{role}.csv", report.PAYOFF_COLUMNS,
                                                   [r for r in report.payoff_rows(payoff)
                                                    if cfg.player_roles[r["player"]] == role])
    plots = {"payoff_heatmap": report.plot_payoff(payoff, out / "payoff_heatmap.png"),
             "ratings": report.plot_ratings(ratings, out / "ratings.png")}
    first = resolve_checkpoint(cfg.checkpoints[0])
    progress_csv = first.trial_dir / "progress.csv" if first.trial_dir else None
    if progress_csv is not None and progress_csv.is_file():
        plots.update(report.plot_progress(progress_csv, out))
    replays = [replay for player in focal for replay in
               write_replays(cfg.env_id, specs, levels, results, player, cfg.replays, out, setup=cfg.env_setup,
                             per_level=large_levels(levels))
               ] if cfg.replays else []
    summary = {
        "env": cfg.env_id,
        "players": len(players),
        "games": len(results),
        "levels": f"{len(levels)} ({cfg.levels or 'default'})",
        "games per pair": cfg.games_per_pair + cfg.games_per_pair % 2,
        "seed": cfg.seed,
        "main": ", ".join(focal),
        **({"roles": ", ".join(f"{r} (seat {k}: {', '.join(a for a, x in cfg.env_setup['roles'].items() if x == r)})"
                               for k, r in enumerate(roles))} if roles else {}),
        "runs": "; ".join(f"{label} = {path}" for label, path in legend.items()),
        "progress.csv": str(progress_csv) if progress_csv is not None and progress_csv.is_file() else "not found",
        "play time (s)": f"{play_s:.1f}",
    }
    files["report"] = report.write_report(out, title="Evaluation report", summary=summary, ratings=rating_rows,
                                          levels=level_rows, plots=plots, replays=replays, role_ratings=role_tables,
                                          reasons=reason_rows)
    write_text(out / "eval_config.json", json.dumps(asdict(cfg), indent=2) + "\n")
    from spade_rllib.report import write_quietly

    html = write_quietly([out], command="python -m spade_rllib.evaluate")
    if html is not None:
        files["html"] = html
    console = "\n\n".join(f"role {role}:\n{report.console_table(rows, cfg.top)}" for role, rows in role_tables.items()) \
        if roles else report.console_table(rating_rows, cfg.top)
    if reason_rows:
        console += "\n\n" + report.reasons_console(reason_rows)
    return {"files": files, "plots": plots, "replays": replays, "ratings": rating_rows, "results": results,
            "players": players, "summary": summary, "console": console, "role_ratings": role_tables}


def print_exploitability(cfg: EvalConfig) -> int:
    """`--exploitability`: one line per checkpoint (main, members, league mixtures); exit 2 on a bad checkpoint."""
    from spade_rllib.players.exploitability_report import checkpoint_exploitability, exploitability_text

    for path in [*cfg.checkpoints, *cfg.vs_checkpoints]:
        try:
            values = checkpoint_exploitability(path, cfg.env, members=cfg.league)
        except (PolicyLoadError, ValueError) as e:
            print(f"error: {e}", file=sys.stderr)
            return EXIT_USAGE
        print(f"{path}: {exploitability_text(values)}")
    return 0


@cli_entry(user_errors=(PolicyLoadError,))
def main(argv: Sequence[str] | None = None) -> int:
    from spade_rllib.evaluation.schedule import ScheduleError

    try:
        cfg = parse_args(argv)
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return EXIT_USAGE
    if cfg.exploitability:
        return print_exploitability(cfg)
    try:
        outcome = evaluate(cfg)
    except (PolicyLoadError, ScheduleError) as e:
        print(f"error: {e}", file=sys.stderr)
        return EXIT_USAGE
    print(outcome["console"])
    print(f"{outcome['summary']['games']} games, {outcome['summary']['players']} players -> {Path(cfg.out) / 'report.md'}")
    if "html" in outcome["files"]:
        print(f"report: {outcome['files']['html']} (open in a browser)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
