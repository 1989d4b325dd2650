"""The HTML report: built from run and evaluation directories, checked as text and in a real browser.

The runs here are written by hand in the layout `train` and `evaluate` produce (result.json lines,
config.yaml, final_evaluation.json, league.csv; eval_config.json, payoff/ratings/games CSVs,
replays), so the checks need no Ray. The browser test renders the file in headless Chromium (the
Debian package `chromium`; `make test` installs it where apt is usable) and reads back the page's
own self-check (every image decoded and not one colour, heatmap cells, errors), screenshots it and
looks for console errors; it skips only where no Chromium binary can be found.
"""
from __future__ import annotations

import base64
import csv
import html
import io
import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
LEVELS = ("crossroads", "maze_17", "open_field")
BOTS = ("random", "rusher", "defender")
SNAPSHOTS = 3


def _result(it: int, seed: int = 0) -> dict:
    rng = np.random.default_rng(seed * 100 + it)
    w = min(0.95, 0.1 * it)
    heldout = {lv: {b: {"win_rate": w / 2, "draw_rate": 0.3, "score": w / 2 + 0.15, "mean_length": 50.0, "games": 4.0}
                    for b in (*BOTS, "self")} for lv in LEVELS}
    for b in BOTS:
        heldout[b] = {"win_rate": w / 2, "draw_rate": 0.3, "score": w / 2 + 0.15, "mean_length": 50.0}
    heldout.update(ladder={"score": w / 2 + 0.15}, iteration=float(it))
    plan = {"main": 0.5, **{b: 0.1 for b in BOTS}, **{f"main_v{g}": 0.2 / SNAPSHOTS for g in range(1, SNAPSHOTS + 1)}}
    return {
        "training_iteration": it, "time_total_s": 2.0 * it, "time_this_iter_s": 2.0,
        "env_runners": {"num_env_steps_sampled_lifetime": 4096 * it, "num_env_steps_sampled": 4096,
                        "episode_return_mean": float(rng.normal())},
        "eval": {f"bot:{b}" if b != "random" else b: {"win_rate": w, "draw_rate": (1 - w) / 2, "loss_rate": (1 - w) / 2,
                                                        "games": 10.0} for b in BOTS},
        "train": {"mirror": {"win_rate": 0.3, "draw_rate": 0.4, "loss_rate": 0.3, "games": 50.0},
                  "main_v1": {"win_rate": 0.6, "draw_rate": 0.2, "loss_rate": 0.2, "games": 10.0}},
        "heldout": heldout,
        "league": {"size": 3.0 + SNAPSHOTS, "main_rating": 1000.0 + 10 * it, "plan": plan,
                   "rating": {"random": 800.0, "rusher": 1300.0, "defender": 1000.0,
                              **{f"main_v{g}": 950.0 + 40 * g for g in range(1, SNAPSHOTS + 1)}}},
        "curriculum": {"difficulty": 2.0 + 0.2 * it, "size_mean": 7.0 + it // 3},
        "config": {"huge": "left out"},
    }


def write_run(root: Path, name: str = "quickstart_00000", iterations: int = 8, seed: int = 0) -> Path:
    """A trial directory as `train` leaves it."""
    trial = root / name
    trial.mkdir(parents=True)
    with open(trial / "result.json", "w") as f:
        for it in range(1, iterations + 1):
            f.write(json.dumps(_result(it, seed)) + "\n")
    config = {"experiment": {"name": "quickstart", "seed": seed}, "env": {"id": "CaptureTheFlag-v0", "difficulty": 2.0},
              "self_play": {"mode": "mirror", "opponent_mix": {"random": 0.1}}, "league": {"enabled": True},
              "curriculum": {"enabled": False}, "training": {"stop": {"time_s": 30}},
              "evaluation": {"interval": 1, "games": 10, "opponents": ["random", "bot:rusher"], "greedy": False,
                             "heldout_levels": ["/x/heldout_ctf"], "heldout_games": 4,
                             "targets": {"random": 0.9, "bot:rusher": 0.99}}}
    (trial / "config.yaml").write_text(yaml.safe_dump(config))
    final = {}
    for opp, (w, d) in {"random": (0.9, 0.1), "bot:rusher": (0.5, 0.2), "mirror": (0.3, 0.4)}.items():
        final.update({f"final/{opp}/win_rate": w, f"final/{opp}/draw_rate": d, f"final/{opp}/loss_rate": 1 - w - d,
                      f"final/{opp}/games": 20})
    final.update({"final_heldout/still/win_rate": 0.5, "final_heldout/still/draw_rate": 0.5, "final_heldout/still/games": 8,
                  "final_heldout/levels": ["open_field", "twin_rooms"]})
    final.update({"final_heldout_all/still/win_rate": 0.9, "final_heldout_all/still/draw_rate": 0.1, "final_heldout_all/still/loss_rate": 0.0,
                  "final_heldout_all/still/games": 24,
                  "final_heldout_all/levels": ["crossroads", "open_field"]})
    config["evaluation"]["final_heldout_targets"] = {"still": 0.95}
    config["evaluation"]["final_heldout_navigation_target"] = 0.8
    (trial / "config.yaml").write_text(yaml.safe_dump(config))
    (trial / "final_evaluation.json").write_text(json.dumps(final))
    with open(trial / "league.csv", "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["member", "rating", "games", "main_win_rate", "main_plan_p"])
        writer.writerow(["rusher", "1300.0", "10", "0.2", "0.1"])
        writer.writerow(["main_v1", "990.0", "10", "0.6", "0.2"])
    return trial


def _gif(path: Path) -> None:
    from PIL import Image

    frames = []
    for k in range(1, 4):
        frame = np.full((40, 40, 3), 230, np.uint8)
        frame[10 + k:20 + k, 10:20] = (40, 90, 220)  # an agent moving down
        frames.append(Image.fromarray(frame))
    frames[0].save(path, save_all=True, append_images=frames[1:], duration=100, loop=0)


def write_eval(root: Path, trial: Path | None = None, games_per_player: int = 40) -> Path:
    """An `evaluate --out` directory with one replay; ratings.csv says each player played `games_per_player`."""
    out = root / "eval_out"
    (out / "replays").mkdir(parents=True)
    players = ["main", "random", "rusher"]
    (out / "eval_config.json").write_text(json.dumps({
        "checkpoints": [str(trial / "checkpoint_000001")] if trial else [], "levels": "heldout", "games_per_pair": 2,
        "seed": 0, "stochastic": False, "env_id": "CaptureTheFlag-v0", "main_id": "main"}))
    games = []
    for i, (a, b, lv) in enumerate([("main", "random", "crossroads"), ("random", "main", "maze_17"),
                                    ("main", "rusher", "crossroads"), ("rusher", "main", "maze_17"),
                                    ("random", "rusher", "crossroads")]):
        games.append({"index": i, "seat0": a, "seat1": b, "level_id": lv, "seed": i, "winner_seat": i % 2 - (i == 4),
                      "reason": "capture", "length": 30})
    for name, rows in (("games", games),):
        with open(out / f"{name}.csv", "w", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=list(rows[0]))
            writer.writeheader()
            writer.writerows(rows)
    with open(out / "ratings.csv", "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["rank", "player", "kind", "elo", "elo_low", "elo_high", "games", "wins", "draws", "losses", "score"])
        for rank, (p, elo) in enumerate([("rusher", 1100), ("main", 1000), ("random", 900)], start=1):
            half = games_per_player // 2
            writer.writerow([rank, p, "bot", elo, elo - 50, elo + 50, games_per_player, half, 0, games_per_player - half, 0.5])
    with open(out / "payoff.csv", "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["player", "opponent", "games", "wins", "draws", "losses", "score"])
        for a in players:
            for b in players:
                if a != b:
                    writer.writerow([a, b, 2, 1, 0, 1, 0.5])
    _gif(out / "replays" / "game00001_loss.gif")
    return out


# ----------------------------------------------------------------------------------------------
# As text
# ----------------------------------------------------------------------------------------------


def _images(text: str) -> list[bytes]:
    return [base64.b64decode(m) for m in re.findall(r'src="data:image/(?:png|gif);base64,([^"]+)"', text)]


def test_report_of_a_run_has_its_figures_tables_and_what_was_evaluated(tmp_path):
    from spade_rllib.report import main

    trial = write_run(tmp_path / "exp")
    assert main([str(trial)]) == 0
    text = (trial / "report.html").read_text()
    # what was evaluated, at the top: levels, greedy or sampled, games
    top = text[:text.index("<h2>Results</h2>")]
    assert "generated at difficulty 2" in top and "sampled from the policy" in top and "20 games per opponent" in top
    assert "heldout_ctf" in top and "4 games per map and opponent" in top
    # verdicts from the config's targets (rusher's 0.99 is not met, random's 0.9 is)
    assert re.search(r"random</td>.*?PASS", text) and re.search(r"bot:rusher</td>.*?BELOW", text)
    line = html.unescape(text)[html.unescape(text).index("the held-out line (last checkpoint on maps"):]
    assert "open_field, twin_rooms" in line[:200] and re.search(r"still</td><td>0.750</td>.*?BELOW", line)
    nav = html.unescape(text)[html.unescape(text).index("navigation on every held-out map"):]
    assert re.search(r"still</td><td>0.950</td>.*?PASS</span> \(score 0.950 vs target 0.8\)", nav[:900])
    # held-out heatmap: every map x opponent cell plus the mean row
    assert text.count('class="hm-cell"') == (len(LEVELS) + 1) * (len(BOTS) + 1)
    for caption in ("main's score per opponent over training", "win / draw / loss", "held-out score over training",
                    "league Elo by snapshot generation", "PFSP opponent distribution", "curriculum difficulty"):
        assert caption in html.unescape(text), caption
    images = _images(text)
    assert len(images) >= 7
    from PIL import Image

    for data in images:
        pixels = np.asarray(Image.open(io.BytesIO(data)).convert("RGB"))
        assert pixels.std() > 5  # not one colour
    assert "config" not in json.dumps([]) and "left out" not in text  # the results' config is not read
    assert "http" not in re.sub(r'(src="data:[^"]+"|xmlns="[^"]+")', "", text)  # nothing fetched from a network


def test_report_overlays_runs_and_includes_an_evaluation_with_its_replays(tmp_path):
    from spade_rllib.report import report

    a = write_run(tmp_path / "exp", "quickstart_aaaa")
    write_run(tmp_path / "exp", "quickstart_bbbb", seed=1)
    ev = write_eval(tmp_path, a)
    path = report([str(tmp_path / "exp"), str(ev)], out=tmp_path / "both.html")
    text = path.read_text()
    assert "quickstart_aaaa" in text and "quickstart_bbbb" in text
    assert "argmax (deterministic" in text and "levels</dt><dd>heldout" in text
    assert "payoff matrix" in text and "ratings with 95% bootstrap intervals" in text
    assert 'src="data:image/gif;base64,' in text and "main plays <b>red (team B)</b>" in text  # game 1: main in seat 1
    assert text.count("What was evaluated") == 1 and not list(tmp_path.glob(".both.html.*"))  # written atomically


def test_report_cli_refuses_a_directory_without_runs(tmp_path, capsys):
    from spade_rllib.report import main

    assert main([str(tmp_path)]) == 2
    assert "no run here" in capsys.readouterr().err
    assert main([str(tmp_path / "missing")]) == 2


def test_final_verdicts_come_from_the_config_targets():
    from spade_rllib.training.targets import SCORE, WIN_RATE, target_verdicts

    final = {"final/random/win_rate": 0.8, "final/random/draw_rate": 0.2, "final/bot:rusher/win_rate": 0.5,
             "final/bot:rusher/draw_rate": 0.5}
    got = target_verdicts({"evaluation": {"targets": {"random": 0.85, "bot:rusher": 0.8}}}, final)
    assert [(v.opponent, v.metric, round(v.value, 3), v.met) for v in got] == [
        ("random", SCORE, 0.9, True), ("bot:rusher", SCORE, 0.75, False)]
    legacy = target_verdicts({"evaluation": {"target_win_rate": 0.9, "opponents": ["random"]}}, final)
    assert [(v.opponent, v.metric, v.met) for v in legacy] == [("random", WIN_RATE, False)]


def test_targets_are_validated_before_ray():
    from spade_rllib.config.run_config import ConfigError, parse_config

    base = {"env": {"id": "CaptureTheFlag-v0"}, "evaluation": {"opponents": ["random", "bot:rusher"]}}
    cfg = parse_config({**base, "evaluation": {**base["evaluation"], "targets": {"bot:rusher": 0.75}}})
    assert cfg.evaluation.targets == {"bot:rusher": 0.75}
    with pytest.raises(ConfigError, match=r"evaluation.targets.bot:rushr = 'bot:rushr': unknown opponent \(did you mean 'bot:rusher'"):
        parse_config({**base, "evaluation": {**base["evaluation"], "targets": {"bot:rushr": 0.75}}})
    with pytest.raises(ConfigError, match=r"evaluation.targets.random = 1.5: out of range"):
        parse_config({**base, "evaluation": {**base["evaluation"], "targets": {"random": 1.5}}})


# ----------------------------------------------------------------------------------------------
# In a browser
# ----------------------------------------------------------------------------------------------

CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "chrome")


def chromium() -> str | None:
    explicit = os.environ.get("CHROMIUM")
    if explicit and shutil.which(explicit):
        return shutil.which(explicit)
    return next((shutil.which(n) for n in CHROMIUM_NAMES if shutil.which(n)), None)


def render(page: Path, tmp_path: Path) -> tuple[dict, Path, str]:
    """(the page's self-check, a full-page screenshot, Chromium's log) of `page` in headless Chromium."""
    exe = chromium()
    if exe is None:
        pytest.skip("no Chromium binary found (apt-get install chromium, or set CHROMIUM=/path/to/chrome); "
                    "`make test` installs it where apt-get is usable")
    flags = [exe, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--hide-scrollbars",
             "--no-first-run", "--no-default-browser-check", f"--user-data-dir={tmp_path / 'chrome-profile'}",
             "--enable-logging=stderr", "--v=0", "--virtual-time-budget=5000"]
    dom = subprocess.run([*flags, "--dump-dom", page.as_uri()], capture_output=True, text=True, timeout=120, check=False)
    assert dom.returncode == 0, dom.stderr[-2000:]
    found = re.search(r'<pre id="selfcheck">([^<]*)</pre>', dom.stdout)
    assert found and found.group(1), "the page's self-check did not run: " + dom.stdout[-1000:]
    shot = tmp_path / "report.png"
    snap = subprocess.run([*flags, "--window-size=1280,2400", f"--screenshot={shot}", page.as_uri()],
                          capture_output=True, text=True, timeout=120, check=False)
    assert snap.returncode == 0 and shot.is_file(), snap.stderr[-2000:]
    return json.loads(html.unescape(found.group(1))), shot, dom.stderr + snap.stderr


def console_errors(log: str) -> list[str]:
    """Console messages of the page at level error, and uncaught exceptions, from Chromium's log."""
    return [ln for ln in log.splitlines() if "CONSOLE" in ln and ("Uncaught" in ln or ":ERROR:" in ln or "error" in ln.lower())]


def test_report_renders_in_headless_chromium(tmp_path):
    from spade_rllib.report import report
    from PIL import Image

    trial = write_run(tmp_path / "exp")
    ev = write_eval(tmp_path, trial)
    page = report([str(trial), str(ev)], out=tmp_path / "report.html")
    check, shot, log = render(page, tmp_path)
    assert check["errors"] == [] and console_errors(log) == [], (check, console_errors(log))
    assert check["images"] >= 8 and check["decoded"] == check["images"] and check["blank"] == [], check
    # held-out map x opponent (+ mean row), the evaluation's level x opponent (+ all levels), payoff 3x3 minus diagonal
    assert check["heatmap_cells"] == (len(LEVELS) + 1) * (len(BOTS) + 1) + 3 * 2 + 6, check
    assert check["tables"] >= 6 and check["sections"] >= 6, check
    pixels = np.asarray(Image.open(shot).convert("L"), dtype=float)
    assert pixels.shape[1] == 1280 and pixels.std() > 10  # something drawn, not a blank page
    rows_with_ink = (pixels < 200).any(axis=1).mean()
    assert rows_with_ink > 0.3, rows_with_ink


def test_browser_check_fails_on_a_broken_page(tmp_path):
    """The self-check and the console scan catch what they are there to catch."""
    from spade_rllib.reporting.html import SELF_CHECK_JS

    one_colour = io.BytesIO()
    from PIL import Image

    Image.new("RGB", (30, 30), (200, 10, 10)).save(one_colour, format="PNG")
    page = tmp_path / "broken.html"
    page.write_text(f"<html><head><script>{SELF_CHECK_JS}</script></head><body>"
                    f'<img alt="flat" src="data:image/png;base64,{base64.b64encode(one_colour.getvalue()).decode()}">'
                    '<img alt="missing" src="data:image/png;base64,AAAA">'
                    "<script>console.error('boom'); undefinedFunction();</script>"
                    '<pre id="selfcheck"></pre></body></html>')
    check, _, log = render(page, tmp_path)
    assert set(check["blank"]) == {"flat", "missing"} and check["decoded"] == 1, check
    assert any("undefinedFunction" in e for e in check["errors"]), check
    assert console_errors(log), log[-2000:]


def test_heldout_heatmap_goes_to_tensorboard_as_an_image(tmp_path):
    pytest.importorskip("tensorboard")
    from types import SimpleNamespace

    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    from spade_rllib.reporting.tensorboard import IMAGE_TAG, heatmap_callback

    callback = heatmap_callback()
    trial = SimpleNamespace(trial_id="t0", path=str(tmp_path))
    for it in (1, 2, 2, 3):  # the third result repeats held-out iteration 2: no new image
        result = _result(it)
        result["heldout"]["iteration"] = float(min(it, 2))
        callback.on_trial_result(it, [trial], trial, result)
    callback.on_trial_complete(3, [trial], trial)
    acc = EventAccumulator(str(tmp_path), size_guidance={"images": 0})
    acc.Reload()
    assert IMAGE_TAG in acc.Tags()["images"]
    images = acc.Images(IMAGE_TAG)
    assert [im.step for im in images] == [1, 2] and all(im.width > 100 and im.height > 50 for im in images)


def test_a_trial_brings_the_evaluations_inside_it(tmp_path):
    from spade_rllib.reporting import find_runs

    trial = write_run(tmp_path / "exp")
    nested = write_eval(trial, trial)  # evaluate --out <trial>/eval_out
    assert find_runs(trial) == [trial, nested]
    assert find_runs(tmp_path / "exp") == [trial]


def test_header_lists_the_heldout_maps_the_final_evaluation_played_without_periodic_heldout(tmp_path):
    """The demo's case: no periodic held-out evaluation, the held-out lines in final_evaluation.json."""
    from spade_rllib.report import report

    trial = write_run(tmp_path / "exp")
    config = yaml.safe_load((trial / "config.yaml").read_text())
    del config["evaluation"]["heldout_levels"]
    config["evaluation"]["final_heldout_opponents"] = ["still", "random", "bot:rusher"]
    (trial / "config.yaml").write_text(yaml.safe_dump(config))
    results = [json.loads(line) for line in (trial / "result.json").read_text().splitlines()]
    with open(trial / "result.json", "w") as f:
        for r in results:
            r.pop("heldout")
            f.write(json.dumps(r) + "\n")
    text = html.unescape(report([str(trial)], out=tmp_path / "r.html").read_text())
    top = text[:text.index("<h2>Results</h2>")]
    assert "none configured" not in top
    assert "open_field, twin_rooms: the held-out line (last checkpoint vs still, random, bot:rusher)" in top
    assert "crossroads, open_field: navigation" in top
    assert "periodic, every" not in top and "the held-out line (last checkpoint on maps it never trained on" in text


def test_ratings_of_a_handful_of_replay_games_are_labelled_not_ranked(tmp_path):
    from spade_rllib.report import report

    trial = write_run(tmp_path / "exp")
    ev = write_eval(trial, trial, games_per_player=4)  # what train's final_games/ holds: 2 games per pair
    text = html.unescape(report([str(trial), str(ev)], out=tmp_path / "r.html").read_text())
    assert "results of a handful of games (5 in all, as few as 4 per player)" in text
    assert "too few games to rate or rank players" in text and "final evaluation's" in text
    assert "ratings with 95% bootstrap intervals" not in text and "elo_low" not in text
    top = text[:text.index("<h2>Results</h2>")]
    assert "a handful of games (5, as few as 4 per player)" in top
    many = html.unescape(report([str(write_eval(tmp_path / "e2", trial, games_per_player=40))],
                                out=tmp_path / "r2.html").read_text())
    assert "ratings with 95% bootstrap intervals" in many and "handful of games" not in many


def _set_final(trial: Path, **scores: float) -> None:
    """Overwrite final/<opp>/win_rate (draws 0) for the opponents named (`bot_rusher` for `bot:rusher`)."""
    final = json.loads((trial / "final_evaluation.json").read_text())
    for opp, w in scores.items():
        opp = opp.replace("_", ":")
        final.update({f"final/{opp}/win_rate": w, f"final/{opp}/draw_rate": 0.0, f"final/{opp}/loss_rate": 1 - w})
    (trial / "final_evaluation.json").write_text(json.dumps(final))


def test_runs_that_differ_only_in_their_seed_are_read_together(tmp_path, capsys):
    """Seeds of one recipe: each final score's mean and 95% t-interval; another recipe stays out of the group."""
    from scipy import stats

    from spade_rllib.report import main
    from spade_rllib.reporting import load_run
    from spade_rllib.reporting.seeds import final_scores, seed_groups

    wins = [0.4, 0.5, 0.7]
    trials = []
    for k, w in enumerate(wins):
        t = write_run(tmp_path / "exp", f"quickstart_{k:05d}", seed=k)
        _set_final(t, bot_rusher=w)
        trials.append(t)
    other = write_run(tmp_path / "exp", "quickstart_lr", seed=3)  # another recipe: a different learning rate
    cfg = yaml.safe_load((other / "config.yaml").read_text())
    cfg["agent"] = {"lr": 0.1}
    (other / "config.yaml").write_text(yaml.safe_dump(cfg))

    groups = seed_groups([load_run(p) for p in (*trials, other)])
    assert len(groups) == 1 and groups[0].seeds == [0, 1, 2]
    rows = {r.key: r for r in groups[0].rows}
    rusher = rows["final/bot:rusher/score"]
    assert rusher.values == tuple(wins)
    half = stats.t.ppf(0.975, 2) * np.std(wins, ddof=1) / np.sqrt(3)
    assert rusher.interval.mean == pytest.approx(np.mean(wins))
    assert (rusher.interval.low, rusher.interval.high) == pytest.approx((np.mean(wins) - half, np.mean(wins) + half))
    assert rows["final_heldout_all/still/score"].values == pytest.approx((0.95, 0.95, 0.95))  # win + draw/2 where no score key
    assert groups[0].env_steps == [4096 * 8] * 3
    assert final_scores({"final/x/score": float("nan"), "final/y/win_rate": 0.5}) == {"final/y/score": 0.5}

    assert main([str(tmp_path / "exp"), "--out", str(tmp_path / "r.html")]) == 0
    out = capsys.readouterr().out
    assert "across seeds: quickstart: seeds 0, 1, 2 (3 runs, 32,768 env steps)" in out
    assert f"{np.mean(wins):.3f} [{np.mean(wins) - half:.3f}, {np.mean(wins) + half:.3f}]  (0.40 0.50 0.70)" in out
    text = (tmp_path / "r.html").read_text()
    section = text.split("<h2>Across seeds</h2>")[1].split("<h2>")[0]
    assert "0.40 0.50 0.70" in section and "quickstart_00002" in section and "quickstart_lr" not in section
