"""One self-contained HTML file for one or several runs and evaluations.

Images are PNG/GIF data URLs, the style sheet and a short script are inline: the file opens from
disk in any browser, with no server and no network. The script checks the page once it has loaded
(every image decoded and not a single colour, heatmap cells counted, errors caught) and writes what
it found as JSON into `<pre id="selfcheck">`, which the headless-browser test reads back.
"""
from __future__ import annotations

import base64
import datetime as _dt
import html
import math
from pathlib import Path
from typing import Optional, Sequence

from spade_rllib.games import is_level_game
from spade_rllib.reporting import figures as fig
from spade_rllib.reporting.run_reader import EVAL, TRAIN, RunData, unique_labels
from spade_rllib.reporting.seeds import SeedGroup, seed_groups

REPORT_FILE = "report.html"
esc = html.escape

CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Helvetica,Arial,sans-serif;margin:0 auto;max-width:1180px;padding:0 18px 40px;color:#1d1d1f}
h1{font-size:1.5em;margin:18px 0 4px} h2{font-size:1.2em;margin-top:30px;border-bottom:1px solid #ddd;padding-bottom:3px}
h3{font-size:1.0em;margin:16px 0 6px}
.meta{color:#666;font-size:.85em}
.box{background:#f5f7fb;border:1px solid #d6dcea;border-radius:6px;padding:10px 14px;margin:10px 0}
.box dl{display:grid;grid-template-columns:max-content auto;gap:2px 14px;margin:0}
.box dt{font-weight:600;color:#333} .box dd{margin:0}
table.t{border-collapse:collapse;font-size:.85em;margin:6px 0}
table.t th,table.t td{border:1px solid #ddd;padding:3px 7px;text-align:right} table.t th{background:#f0f0f0}
table.t td:first-child,table.t th:first-child{text-align:left}
.pass{color:#137333;font-weight:600} .fail{color:#b3261e;font-weight:600} .na{color:#777}
table.hm{border-collapse:collapse;font-size:.8em} table.hm th{padding:2px 6px;font-weight:500;text-align:left}
table.hm thead th{text-align:center;writing-mode:horizontal-tb}
table.hm td{width:52px;height:24px;text-align:center;border:1px solid #fff}
td.hm-empty{background:#f3f3f3}
figure{margin:10px 0} figcaption{font-weight:600;font-size:.9em;margin-bottom:4px}
img.fig{max-width:100%;border:1px solid #eee}
.note{color:#666;font-size:.8em;margin:3px 0}
.replays{display:flex;flex-wrap:wrap;gap:18px} .replay{max-width:380px}
.legend span.sw{display:inline-block;width:12px;height:12px;border:1px solid #999;margin:0 4px -2px 8px}
code{background:#f3f3f3;padding:1px 4px;border-radius:3px;font-size:.9em}
pre.cmd{background:#f3f3f3;padding:8px;border-radius:4px;font-size:.85em;white-space:pre-wrap}
#selfcheck{display:none}
"""

SELF_CHECK_JS = """
window.__errors = [];
window.addEventListener('error', function (e) { window.__errors.push(String(e.message || e)); });
window.addEventListener('load', function () {
  var out = {images: 0, decoded: 0, blank: [], heatmap_cells: document.querySelectorAll('td.hm-cell').length,
             tables: document.querySelectorAll('table').length, sections: document.querySelectorAll('h2').length,
             errors: window.__errors};
  var imgs = document.querySelectorAll('img');
  for (var i = 0; i < imgs.length; i++) {
    var im = imgs[i]; out.images++;
    if (!im.complete || im.naturalWidth === 0) { out.blank.push(im.alt || ('image ' + i)); continue; }
    out.decoded++;
    var c = document.createElement('canvas'); c.width = im.naturalWidth; c.height = im.naturalHeight;
    var ctx = c.getContext('2d'); ctx.drawImage(im, 0, 0);
    var d = ctx.getImageData(0, 0, c.width, c.height).data, first = -1, varied = false;
    for (var k = 0; k < d.length; k += 4 * 7) {
      var v = (d[k] << 16) | (d[k + 1] << 8) | d[k + 2];
      if (first < 0) first = v; else if (v !== first) { varied = true; break; }
    }
    if (!varied) out.blank.push(im.alt || ('image ' + i));
  }
  document.getElementById('selfcheck').textContent = JSON.stringify(out);
});
"""


def _img(data: Optional[bytes], alt: str, mime: str = "image/png", cls: str = "fig") -> str:
    if not data:
        return ""
    return f'<img class="{cls}" alt="{esc(alt)}" src="data:{mime};base64,{base64.b64encode(data).decode()}">'


def _figure(data: Optional[bytes], caption: str, note: str = "") -> str:
    if not data:
        return ""
    return (f"<figure><figcaption>{esc(caption)}</figcaption>{_img(data, caption)}"
            + (f'<p class="note">{esc(note)}</p>' if note else "") + "</figure>")


def _table(rows: Sequence[dict], columns: Sequence[str], cls: str = "t", raw: Sequence[str] = ()) -> str:
    head = "".join(f"<th>{esc(c)}</th>" for c in columns)
    body = "".join("<tr>" + "".join(f"<td>{row.get(c, '') if c in raw else esc(str(row.get(c, '')))}</td>" for c in columns)
                   + "</tr>" for row in rows)
    return f'<table class="{cls}"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'


def _rounded(row: dict, digits: int = 3) -> dict:
    """Numeric strings of a CSV row shortened to `digits` decimals (ratings to one)."""
    out = {}
    for k, v in row.items():
        try:
            f = float(v)
            out[k] = v if str(v).isdigit() else (f"{f:.1f}" if k == "rating" else f"{f:.{digits}f}")
        except (TypeError, ValueError):
            out[k] = v
    return out


def _dl(items: dict) -> str:
    return "<dl>" + "".join(f"<dt>{esc(str(k))}</dt><dd>{esc(str(v))}</dd>" for k, v in items.items() if v not in (None, "")) + "</dl>"


def _cfg(run: RunData, *path, default=None):
    node = run.config or {}
    for p in path:
        if not isinstance(node, dict) or p not in node:
            return default
        node = node[p]
    return node


def training_levels(run: RunData) -> str:
    """How the run's training levels were made, in words."""
    env = _cfg(run, "env", default={}) or {}
    if _cfg(run, "curriculum", "enabled"):
        return f"adaptive: curriculum strategy '{_cfg(run, 'curriculum', 'strategy')}' (difficulty over time below)"
    if env.get("level_file"):
        return f"one fixed map: {env['level_file']}"
    if env.get("difficulty") is not None:
        return f"generated at difficulty {env['difficulty']:g} (a pool of {env.get('level_pool', 512)} levels per env runner)"
    env_id = str(env.get("id", ""))
    if env_id and not is_level_game(env_id):
        plies = env.get("random_opening_plies")
        return "the game's start position" + (f" after 0-{plies} random opening moves" if plies else "")
    return "the env's default levels"


FEW_GAMES_PER_PLAYER = 20
"""Below this many games for some rated player, an evaluation's ratings are labelled as a handful of games
(the replays `train` plays for the report's GIFs: 2 games per pair), not a ranking."""


def games_per_player(run: RunData) -> Optional[int]:
    """The fewest games any rated player of an evaluation played; None without ratings."""
    games = [int(float(r["games"])) for r in run.ratings if str(r.get("games", "")).strip() not in ("", "nan")]
    return min(games) if games else None


def few_games(run: RunData) -> bool:
    n = games_per_player(run)
    return n is not None and n < FEW_GAMES_PER_PLAYER


def heldout_maps_evaluated(run: RunData) -> str:
    """The held-out maps a training run was scored on, by where: the periodic held-out evaluation (configured
    or found in the last result) and the held-out lines of the final evaluation (final_evaluation.json)."""
    ev = _cfg(run, "evaluation", default={}) or {}
    final = run.final or {}
    greedy = "argmax" if ev.get("greedy") else "sampled actions"
    parts = []
    periodic = [Path(p).name for p in ev.get("heldout_levels") or []] or sorted(fig.heldout_levels(run.last))
    if periodic:
        parts.append(f"{', '.join(periodic)}: periodic, every {ev.get('interval')} iterations, "
                     f"{ev.get('heldout_games')} games per map and opponent, {greedy}")
    line = [str(n) for n in final.get("final_heldout/levels") or []]
    if line:
        parts.append(f"{', '.join(line)}: the held-out line (last checkpoint vs "
                     f"{', '.join(map(str, ev.get('final_heldout_opponents') or [])) or 'its opponents'})")
    every = [str(n) for n in final.get("final_heldout_all/levels") or []]
    if every:
        parts.append(f"{', '.join(every)}: navigation (last checkpoint vs a team that never moves)")
    if parts:
        return "; ".join(parts)
    if ev.get("final_heldout_levels"):
        return "configured for the final evaluation (" + ", ".join(map(str, ev["final_heldout_levels"])) + "), not run yet"
    return "none configured"


def what_was_evaluated(run: RunData) -> dict:
    """The facts a reader needs before reading a score: levels, players, greedy or sampled, games."""
    if run.kind == EVAL:
        ec = run.eval_config or {}
        levels = ec.get("levels") or "default (the game's held-out maps)"
        n = games_per_player(run)
        kind = "evaluation from checkpoints (python -m spade_rllib.evaluate)"
        if few_games(run):
            kind += (f"; a handful of games ({len(run.games)}, as few as {n} per player), played for the replays: "
                     "its ratings rank nothing")
        return {
            "kind": kind,
            "env": ec.get("env_id"),
            "levels": f"{levels}; {len({g.get('level_id') for g in run.games})} levels played",
            "actions": "sampled from the policy (--stochastic)" if ec.get("stochastic") else "argmax (deterministic; pass --stochastic to sample as in training)",
            "games": f"{len(run.games)} games, {ec.get('games_per_pair')} per pair of players (seats swapped equally), seed {ec.get('seed')}",
            "pool": f"{len(run.ratings)} players: " + ", ".join(r["player"] for r in run.ratings[:12]) + (" ..." if len(run.ratings) > 12 else ""),
            "main": ec.get("main_id"),
            "checkpoints": ", ".join(ec.get("checkpoints") or []),
        }
    ev = _cfg(run, "evaluation", default={}) or {}
    greedy = "argmax" if ev.get("greedy") else "sampled from the policy (as in training)"
    stop = _cfg(run, "training", "stop", default={}) or {}
    final_games = next((int(v) for k, v in (run.final or {}).items() if k.endswith("/games") and isinstance(v, (int, float))), None)
    mix = _cfg(run, "self_play", "opponent_mix", default={}) or {}
    opponents = "league (frozen snapshots, bots, PFSP)" if _cfg(run, "league", "enabled") else (
        f"{_cfg(run, 'self_play', 'mode', default='?')} self-play" + (f" + {mix}" if mix else ""))
    return {
        "kind": "training run (python -m spade_rllib.train)",
        "env": _cfg(run, "env", "id"),
        "training levels": training_levels(run),
        "training opponents": opponents,
        "periodic evaluation": (f"every {ev.get('interval')} iterations, {ev.get('games')} games per opponent vs "
                                f"{', '.join(ev.get('opponents') or [])}, on fresh levels like the training ones, actions {greedy}")
        if ev.get("interval") else "off",
        "held-out maps": heldout_maps_evaluated(run),
        "final evaluation": (f"last checkpoint, {final_games} games per opponent on training-like levels, actions {greedy}"
                             if final_games else "not run"),
        "held-out line": (f"last checkpoint on {', '.join(Path(p).name for p in ev.get('final_heldout_levels'))}"
                          + (f" (maps up to {ev.get('final_heldout_max_size')} cells)" if ev.get("final_heldout_max_size") else "")
                          + f" vs {', '.join(ev.get('final_heldout_opponents') or [])}, {ev.get('final_heldout_games')} games "
                          f"per map, opponent and seat") if ev.get("final_heldout_levels") else None,
        "stop": ", ".join(f"{k}={v}" for k, v in stop.items() if v is not None),
        "seed": _cfg(run, "experiment", "seed"),
        "git commit": (run.runinfo or {}).get("git", {}).get("commit") if isinstance((run.runinfo or {}).get("git"), dict) else (run.runinfo or {}).get("git_commit"),
    }


def final_rows(run: RunData, prefix: str = "final", targets_key: str = "targets") -> list[dict]:
    """The final evaluation (`final/...`, or the held-out line's `final_heldout/...` and
    `final_heldout_all/...`) per opponent with its verdict against the config's `evaluation.<targets_key>`
    (`final_heldout_navigation_target`: the still team's least score)."""
    from spade_rllib.training.targets import target_verdicts

    final = run.final or {}
    opps = list(dict.fromkeys(k.split("/")[1] for k in final if k.startswith(prefix + "/") and k.count("/") == 2
                              and k.endswith("/win_rate")))
    config = run.config or {}
    if targets_key != "targets":
        ev = config.get("evaluation") or {}
        targets = ev.get(targets_key)
        targets = {"still": targets} if isinstance(targets, (int, float)) else targets
        config = {"evaluation": {"targets": targets or {}, "opponents": []}}
    verdicts = {v.opponent: v for v in target_verdicts(config, final, prefix=prefix)}
    rows = []
    for opp in opps:
        w, d = final.get(f"{prefix}/{opp}/win_rate", math.nan), final.get(f"{prefix}/{opp}/draw_rate", 0.0)
        l_ = final.get(f"{prefix}/{opp}/loss_rate", 1.0 - w - d if isinstance(w, (int, float)) else math.nan)
        if not all(isinstance(x, (int, float)) for x in (w, d, l_)) or math.isnan(w):
            continue
        v = verdicts.get(opp)
        verdict = '<span class="na">no target</span>' if v is None else (
            f'<span class="{"pass" if v.met else "fail"}">{"PASS" if v.met else "BELOW"}</span> ({esc(v.describe())})')
        rows.append({"opponent": opp, "score": f"{w + d / 2:.3f}", "win": f"{w:.2f}", "draw": f"{d:.2f}", "loss": f"{l_:.2f}",
                     "games": f"{final.get(f'{prefix}/{opp}/games', '')}", "target": verdict})
    return rows


def size_rows(run: RunData) -> list[dict]:
    """The summary's size lines as rows (`final_heldout_size/<class>/<opponent>/...` of final_evaluation.json)."""
    from spade_rllib.rllib.final_heldout_eval import MAP_PREFIX, SIZE_CLASSES, SIZE_PREFIX

    final = run.final or {}
    rows = []
    for key, _, _, label in SIZE_CLASSES:
        names = final.get(f"{SIZE_PREFIX}/{key}/levels") or []
        for k, score in final.items():
            if not (k.startswith(f"{SIZE_PREFIX}/{key}/") and k.endswith("/score")):
                continue
            opp = k[len(f"{SIZE_PREFIX}/{key}/"):-len("/score")]
            per_map = {m: final.get(f"{MAP_PREFIX}/{m}/{opp}/score") for m in names}
            per_map = {m: v for m, v in per_map.items() if isinstance(v, (int, float))}
            worst = min(per_map, key=lambda m: (per_map[m], m)) if per_map else None
            rows.append({"class": label, "maps": ", ".join(names), "opponent": opp, "score": f"{score:.3f}",
                         "games": final.get(f"{SIZE_PREFIX}/{key}/{opp}/games", ""),
                         "worst map": f"{worst} {per_map[worst]:.2f}" if worst else ""})
    return rows


def _replay_legend(env_id: str, seat: Optional[int]) -> str:
    if "CaptureTheFlag" in (env_id or ""):
        main_team = {0: "blue (team A)", 1: "red (team B)"}.get(seat, "unknown seat")
        return ('<p class="legend note">main plays <b>' + esc(main_team) + '</b>.'
                '<span class="sw" style="background:#285adc"></span>team A'
                '<span class="sw" style="background:#d23232"></span>team B'
                '<span class="sw" style="background:#f0be14"></span>A carrying'
                '<span class="sw" style="background:#f07814"></span>B carrying'
                '<span class="sw" style="background:#7896f0"></span>A base'
                '<span class="sw" style="background:#f08282"></span>B base (pale: flag away)'
                '<span class="sw" style="background:#282830"></span>wall. The caption bar shows the step and captures.</p>')
    return f'<p class="legend note">main plays seat {seat if seat is not None else "?"} (seat 0 moves first / team A).</p>'


def _run_sections(run: RunData, runs: Sequence[RunData]) -> list[str]:
    out = []
    if run.kind == TRAIN:
        rows = final_rows(run)
        if rows:
            out.append(f"<h3>{esc(run.label)}: final evaluation of the last checkpoint</h3>"
                       + _table(rows, ["opponent", "score", "win", "draw", "loss", "games", "target"], raw=("target",)))
        held = final_rows(run, prefix="final_heldout", targets_key="final_heldout_targets")
        if held:
            names = (run.final or {}).get("final_heldout/levels") or []
            out.append(f"<h3>{esc(run.label)}: the held-out line (last checkpoint on maps it never trained on"
                       + (f": {esc(', '.join(map(str, names)))}" if names else "") + ")</h3>"
                       + _table(held, ["opponent", "score", "win", "draw", "loss", "games", "target"], raw=("target",)))
        nav = final_rows(run, prefix="final_heldout_all", targets_key="final_heldout_navigation_target")
        if nav:
            out.append(f"<h3>{esc(run.label)}: navigation on every held-out map (main alone, the other team never moves)</h3>"
                       + _table(nav, ["opponent", "score", "win", "draw", "loss", "games", "target"], raw=("target",)))
        sizes = size_rows(run)
        if sizes:
            out.append(f"<h3>{esc(run.label)}: held-out maps per size class (main vs the racing bots on every map)</h3>"
                       + _table(sizes, ["class", "maps", "opponent", "score", "games", "worst map"]))
        hm = fig.heldout_heatmap(run)
        if hm:
            out.append(hm)
        out += exploitability_section(run)
        if run.league:
            out.append(f"<h3>{esc(run.label)}: league table (end of training)</h3>"
                       + _table([_rounded(r) for r in run.league], ["member", "rating", "games", "main_win_rate", "main_plan_p"]))
    else:
        out += [x for x in (fig.eval_level_heatmap(run), fig.payoff_heatmap(run)) if x]
        cols = ["rank", "player", "kind", "elo", "elo_low", "elo_high", "games", "wins", "draws", "losses", "score"]
        if few_games(run):
            # A handful of games (the GIF replays) gives intervals wider than any gap between players: shown as
            # the game counts they are, beside the final evaluation's hundreds of games, not as a ranking.
            trained = run.training is not None and (run.training.final or {})
            note = (" The scores to read are the final evaluation's (its table above)." if trained else "")
            out.append(f"<h3>{esc(run.label)}: results of a handful of games ({len(run.games)} in all, as few as "
                       f"{games_per_player(run)} per player)</h3>"
                       f'<p class="note">Played for the replays below; too few games to rate or rank players, so no '
                       f"Elo is shown.{esc(note)}</p>"
                       + _table(run.ratings[:40], ["player", "kind", "games", "wins", "draws", "losses", "score"]))
        else:
            out.append(_figure(fig.ratings_plot(run), f"{run.label}: ratings with 95% bootstrap intervals"))
            if run.ratings:
                out.append(f"<h3>{esc(run.label)}: ratings</h3>" + _table(run.ratings[:40], cols))
        if run.reasons:  # CaptureTheFlag: why main lost or drew, per map (evaluation/ctf_reasons.py)
            from spade_rllib.evaluation.ctf_reasons import REASONS

            cols = ["level_id", "size", "opponent", "games", "score", "win", *REASONS]
            out.append(f"<h3>{esc(run.label)}: why main did not win, games per map and reason</h3>"
                       + _table(run.reasons, cols)
                       + '<p class="note">' + "; ".join(f"<b>{esc(k)}</b>: {esc(v)}" for k, v in REASONS.items()) + "</p>")
    return [x for x in out if x]


EXPLOITABILITY_NOTE = (
    "Exact exploitability = NashConv / 2, in chips (OpenSpiel's convention): what a best response wins against the "
    "player, computed over the whole game tree, not sampled; 0 is a Nash equilibrium. main: main's current weights; "
    "main's average strategy: the reach-weighted average of main's strategies at every measurement so far (averaging "
    "without a league); league mixture: the league played as one player, its members weighted uniformly, by main's "
    "matchmaking plan or by the Nash equilibrium of their exact payoff matrix (docs/poker.md).")


def _player_label(run: RunData, key: str) -> str:
    label = dict(fig.EXPLOITABILITY_PLAYERS)[key]
    mode = _cfg(run, "evaluation", "exploitability_mixture")
    return label + " (exploitability/mixture)" if key == f"mixture_{mode}" else label


def exploitability_rows(run: RunData) -> list[dict]:
    """Each player's last exact exploitability, the env steps it was measured at and its measurement count."""
    return [{"player": _player_label(run, key), "exploitability": f"{value:.4f}", "at env steps": f"{steps:,.0f}",
             "measurements": n} for key, (value, steps, n) in fig.last_exploitability(run).items()]


def exploitability_section(run: RunData) -> list[str]:
    """A training run's exploitability table and curves (OpenSpiel games with `evaluation.exploitability_interval`);
    [] for runs without the metrics."""
    rows = exploitability_rows(run)
    if not rows:
        return []
    every = _cfg(run, "evaluation", "exploitability_interval")
    when = f"every {every} iterations" if every else "at each measurement"
    return [f"<h3>{esc(run.label)}: exact exploitability (NashConv / 2) at the last measurement</h3>"
            + _table(rows, ["player", "exploitability", "at env steps", "measurements"]),
            _figure(fig.exploitability_curves([run]),
                    f"{run.label}: exact exploitability (NashConv / 2, chips) of main, main's average strategy and the "
                    f"league's mixtures against env steps, measured {when}", EXPLOITABILITY_NOTE)]


def exploitability_seed_rows(group: SeedGroup, confidence: float = 0.95) -> list[dict]:
    """Per player measured in every run of the group: the mean over the seeds of each run's last exploitability,
    its two-sided t interval (clipped at 0) and each seed's value."""
    from spade_rllib.sweeps.stats import seed_interval

    lasts = [fig.last_exploitability(r) for r in group.runs]
    rows = []
    for key, _ in fig.EXPLOITABILITY_PLAYERS:
        if not all(key in last for last in lasts):
            continue
        values = [last[key][0] for last in lasts]
        iv = seed_interval(values, confidence, bounds=(0.0, math.inf), n_boot=0)
        rows.append({"player": _player_label(group.runs[0], key), "mean": f"{iv.mean:.4f}",
                     "95% interval": f"[{iv.low:.4f}, {iv.high:.4f}]", "per seed": " ".join(f"{v:.4f}" for v in values)})
    return rows


def seed_rows(group: SeedGroup) -> list[dict]:
    """A seed group's scores as table rows: mean, 95% t-interval and each seed's value."""
    return [{"score of": row.key[:-len("/score")], "mean": f"{row.interval.mean:.3f}",
             "95% interval": f"[{row.interval.low:.3f}, {row.interval.high:.3f}]",
             "per seed": " ".join(f"{v:.2f}" for v in row.values)} for row in group.rows]


def _seed_sections(trains: Sequence[RunData]) -> list[str]:
    """One table per group of runs that differ only in their seed (`reporting.seeds`)."""
    groups = seed_groups(trains)
    if not groups:
        return []
    parts = ["<h2>Across seeds</h2>"]
    for group in groups:
        parts.append(f"<p><b>{esc(group.label)}</b>: {len(group.runs)} runs ({esc(', '.join(r.label for r in group.runs))}), "
                     f"{esc(group.env_steps_text())}. Score = win + draw/2 of the final evaluation; mean over the seeds "
                     "and its two-sided 95% Student-t interval, clipped to [0, 1].</p>")
        parts += [f"<p>note: {esc(n)}</p>" for n in group.notes]
        parts.append(_table(seed_rows(group), ["score of", "mean", "95% interval", "per seed"]))
        rows = exploitability_seed_rows(group)
        if rows:
            parts.append("<h3>exact exploitability (NashConv / 2) at each seed's last measurement</h3>"
                         + _table(rows, ["player", "mean", "95% interval", "per seed"]))
            parts.append(_figure(fig.exploitability_curves(group.runs),
                                 f"{group.label}: exact exploitability against env steps, mean over the seeds per player "
                                 "with its shaded two-sided 95% Student-t interval (clipped at 0), at the measurements "
                                 "every seed has (aligned by measurement index)", EXPLOITABILITY_NOTE))
    return parts


def build_html(runs: Sequence[RunData], command: str = "") -> str:
    """The whole report as one HTML string."""
    runs = list(runs)
    paths = {r.path for r in runs}
    for r in runs:  # an evaluation brings its training run along unless that run is given too
        if r.kind == EVAL and r.training is not None and r.training.path not in paths:
            runs.append(r.training)
            paths.add(r.training.path)
    unique_labels(runs)
    trains = [r for r in runs if r.kind == TRAIN]
    evals = [r for r in runs if r.kind == EVAL]
    title = "spade_rllib report: " + ", ".join(r.label for r in runs)
    parts = [f"<h1>{esc(title)}</h1>",
             f'<p class="meta">written {_dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")}'
             + (f" by <code>{esc(command)}</code>" if command else "") + "</p>"]
    parts.append("<h2>What was evaluated</h2>")
    for run in runs:
        parts.append(f'<div class="box"><b>{esc(run.label)}</b> <span class="meta">{esc(str(run.path))}</span>'
                     f"{_dl(what_was_evaluated(run))}</div>")
    parts.append("<h2>Results</h2>")
    for run in runs:
        parts += _run_sections(run, runs)
    parts += _seed_sections(trains)
    if trains:
        parts.append("<h2>Training curves</h2>")
        parts.append(_figure(fig.score_curves(trains), "main's score per opponent over training (periodic evaluation)",
                             "score = win + draw/2; line: exponential moving average (weight 0.6), dots: each evaluation."))
        for run in trains:
            parts.append(_figure(fig.wdl_areas(run), f"{run.label}: win / draw / loss shares per opponent (smoothed)"))
        parts.append(_figure(fig.score_curves(trains, prefix="train", title="training games"),
                             "main's score per training opponent (training games, sampled actions)"))
        parts.append(_figure(fig.heldout_curves(trains), "main's held-out score over training (mean over the maps)"))
        league = fig.league_elo(trains)
        plans = [fig.pfsp_distribution(r) for r in trains]
        if league or any(plans):
            parts.append("<h2>League</h2>")
            parts.append(_figure(league, "league Elo by snapshot generation, scripted bots as reference lines"))
            for run, plan in zip(trains, plans):
                parts.append(_figure(plan, f"{run.label}: PFSP opponent distribution over training"))
        cur = fig.curriculum(trains)
        if cur:
            parts.append("<h2>Curriculum</h2>" + _figure(cur, "curriculum difficulty, level size and PLR buffer scores"))
        parts.append("<h2>Throughput</h2>" + _figure(fig.throughput(trains), "env steps per second (and main's rating)"))
    replays = [(r, rp) for r in evals for rp in r.replays]
    if replays:
        parts.append("<h2>Replays of main's games</h2><div class=\"replays\">")
        for run, rp in replays:
            gif = Path(rp["gif"]).read_bytes() if Path(rp["gif"]).is_file() else None
            parts.append(f'<div class="replay"><figcaption>{esc(run.label)}: game {rp["index"]}, {esc(rp["outcome"])} vs '
                         f'{esc(str(rp["opponent"]))} on {esc(str(rp["level_id"]))}'
                         + (f", {rp['length']} steps" if rp.get("length") else "")
                         + (f" ({esc(str(rp['why']))})" if rp.get("why") and rp.get("why") != "win" else "") + "</figcaption>"
                         + _img(gif, f"replay {rp['index']}", mime="image/gif", cls="gif")
                         + _replay_legend(str((run.eval_config or {}).get("env_id", "")), rp.get("main_seat")) + "</div>")
        parts.append("</div>")
    parts.append("<h2>Commands</h2>" + _commands(runs))
    body = "\n".join(p for p in parts if p)
    return (f"<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>{esc(title)}</title>"
            f"<style>{CSS}</style><script>{SELF_CHECK_JS}</script></head><body>{body}"
            f'<pre id="selfcheck"></pre></body></html>')


def _commands(runs: Sequence[RunData]) -> str:
    lines = []
    for run in runs:
        if run.kind == TRAIN:
            ckpts = sorted(run.path.glob("checkpoint_*"))
            ck = ckpts[-1] if ckpts else run.path
            difficulty = _cfg(run, "env", "difficulty")
            lines.append(f"# {run.label}")
            if difficulty is not None:
                lines.append(f"python -m spade_rllib.evaluate --checkpoint {run.path} --levels generated:8@{difficulty:g} "
                             f"--stochastic --out {run.path}/eval_train_levels   # on training-like levels, sampling")
            lines.append(f"python -m spade_rllib.evaluate --checkpoint {run.path} --levels heldout --out {run.path}/eval_heldout"
                         "   # on the held-out maps, argmax")
            lines.append(f"python -m spade_rllib.play --checkpoint {ck}")
            lines.append(f"python -m spade_rllib.train --resume {run.path}")
    lines.append("python -m spade_rllib.report " + " ".join(str(r.path) for r in runs))
    return f'<pre class="cmd">{esc(chr(10).join(lines))}</pre>'


def write_report(runs: Sequence[RunData], out: str | Path, command: str = "") -> Path:
    """Write the report to `out` (a file, or a directory for its report.html) atomically."""
    out = Path(out)
    if out.is_dir() or not out.suffix:
        out = out / REPORT_FILE
    out.parent.mkdir(parents=True, exist_ok=True)
    from spade_rllib.artifacts.atomic_io import write_text

    write_text(out, build_html(runs, command=command))  # temporary file + rename: never half a report
    return out
