"""Where an iteration's time goes (spade_rllib.training.phases), the summary's budget and time lines, and the
shipped-config speed bench's reading of result.json. Pure: no Ray."""
from __future__ import annotations

import math
import sys
import time
from pathlib import Path

import pytest

from spade_rllib.config.run_config import parse_config
from spade_rllib.training.phases import PHASES, PhaseClock, PhaseTotals, phase_ms_text, phase_shares, phase_text, rate_spread

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def test_clock_charges_the_rest_of_the_iteration_to_other_and_starts_afresh():
    clock = PhaseClock()
    with clock.phase("learn"):
        time.sleep(0.02)
    clock.add("sample_wait", 0.005)
    clock.add("component/league", 0.001)  # inside `components`: not part of the top-level sum
    out = clock.pop(total_s=0.1)
    assert set(PHASES) <= set(out)
    assert out["learn"] >= 0.02 and out["sample_wait"] == pytest.approx(0.005)
    top = sum(out[k] for k in PHASES)
    assert top == pytest.approx(0.1, abs=1e-9)  # the phases add up to the iteration
    assert out["other"] == pytest.approx(0.1 - out["learn"] - 0.005)
    assert out["component/league"] == pytest.approx(0.001)
    assert clock.pop(total_s=0.0) == {k: 0.0 for k in PHASES}  # nothing carried over


def test_clock_never_reports_negative_other():
    clock = PhaseClock()
    clock.add("learn", 0.5)
    assert clock.pop(total_s=0.3)["other"] == 0.0


def test_shares_and_texts_leave_component_rows_out():
    phases = {"learn": 0.6, "sample_wait": 0.3, "evaluation": 0.1, "component/league": 5.0,
              "component": {"plr": 1.0}, "weight_sync": 0.0004}
    shares = phase_shares(phases)
    assert shares == pytest.approx({"learn": 0.6, "sample_wait": 0.3, "evaluation": 0.1, "weight_sync": 0.0004 / 1.0004},
                                   rel=1e-3)
    assert phase_text(phases).startswith("learn 60%, sample_wait 30%, evaluation 10%")
    assert "weight_sync" not in phase_text(phases)  # under 1%
    assert phase_ms_text(phases) == "ms sample_wait 300 learn 600 evaluation 100"  # PHASES order, >= 1 ms
    assert phase_ms_text({}) == ""


def test_rate_spread_quantiles_skip_missing_values():
    s = rate_spread([10.0, float("nan"), 20.0, 30.0, 40.0, 50.0])
    assert s["median"] == pytest.approx(30.0) and s["p10"] == pytest.approx(14.0) and s["p90"] == pytest.approx(46.0)
    assert all(math.isnan(v) for v in rate_spread([]).values())


def test_totals_flatten_nested_component_rows_and_keep_rates():
    t = PhaseTotals()
    t.add({"learn": 0.2, "component": {"league": 0.01}}, 1000.0)
    t.add({"learn": 0.3, "component": {"league": 0.02}}, None)
    assert t.seconds == pytest.approx({"learn": 0.5, "component/league": 0.03})
    assert t.rates == [1000.0]


def _cfg(**stop):
    return parse_config({"env": {"id": "CaptureTheFlag-v0"}, "training": {"stop": stop}})


def test_budget_lines_say_how_the_run_ended():
    from spade_rllib.training.run_summary import budget_lines

    assert budget_lines(_cfg(time_s=60), 1000, 60) == []  # no env-step budget: nothing to say
    assert "reached" in " ".join(budget_lines(_cfg(env_steps=1000, time_s=60), 1024, 30))
    cut = " ".join(x.strip() for x in budget_lines(_cfg(env_steps=1000, time_s=60), 400, 60.5))
    assert "NOT reached" in cut and "training.stop.time_s = 60 s" in cut and "400" in cut and "40%" in cut
    assert "interrupted" in " ".join(budget_lines(_cfg(env_steps=1000, time_s=60), 400, 10, interrupted=True))


def test_time_lines_give_shares_and_the_rate_spread():
    from spade_rllib.training.run_summary import time_lines

    assert time_lines(None) == [] and time_lines(PhaseTotals()) == []
    t = PhaseTotals()
    for rate in (100.0, 200.0, 300.0):
        t.add({"learn": 0.7, "sample_wait": 0.3}, rate)
    text = " ".join(time_lines(t))
    assert "learn 70%, sample_wait 30%" in text and "median 200" in text


def test_console_shows_progress_against_the_env_step_budget():
    from spade_rllib.training.console import RunConsole, short_line

    result = {"training_iteration": 3, "time_total_s": 12.0, "time_this_iter_s": 0.5,
              "env_runners": {"num_env_steps_sampled_lifetime": 1_200_000, "num_env_steps_sampled": 4096},
              "spade": {"phase_s": {"learn": 0.4, "sample_wait": 0.1}}}
    assert "1.2M/3.5M steps" in short_line(result, budget_s=900, budget_steps=3_500_000)
    lines = []
    console = RunConsole(900, "t", lambda r: "full", live=False, out=type("O", (), {"write": lines.append,
                                                                                    "flush": lambda self: None})(),
                         budget_steps=3_500_000)
    console.on_result(result, None)
    assert console.totals.seconds == pytest.approx({"learn": 0.4, "sample_wait": 0.1})
    assert console.totals.rates == pytest.approx([4096 / 0.5])


def test_shipped_bench_summarizes_result_rows_after_the_warmup():
    from bench.speed.shipped_speed import summarize

    rows = [{"time_this_iter_s": 10.0, "env_runners": {"num_env_steps_sampled": 10},  # warm-up: left out
             "spade": {"phase_s": {"learn": 9.0}}}]
    rows += [{"time_this_iter_s": 0.5, "env_runners": {"num_env_steps_sampled": 4096},
              "spade": {"phase_s": {"learn": 0.4, "sample_wait": 0.1, "component": {"plr": 0.01}}}} for _ in range(4)]
    out = summarize(rows, warmup=1)
    assert out["iterations"] == 4 and out["env_steps"] == 4 * 4096
    assert out["sps"] == pytest.approx(4096 / 0.5)
    assert out["phase_s"]["learn"] == pytest.approx(1.6) and out["phase_s"]["component/plr"] == pytest.approx(0.04)
    assert out["phase_share"]["learn"] == pytest.approx(0.8)
    assert out["spread"]["median"] == pytest.approx(8192.0)


def test_shipped_bench_refuses_an_unknown_config_with_a_hint():
    from bench.speed.shipped_speed import parse_configs

    assert parse_configs("quickstart,connect_four") == ["quickstart", "connect_four"]
    with pytest.raises(SystemExit, match="did you mean 'flagship'"):
        parse_configs("flagshp")


def test_shipped_bench_runs_the_users_command_and_reads_its_trial(tmp_path, monkeypatch):
    """`run_config`: the real `train` command with the config's own settings, time-boxed, no final evaluation;
    its figures come from the trial's result.json (a fake run here: no Ray)."""
    import json
    import subprocess

    from bench.speed import shipped_speed

    seen = {}

    def fake_run(cmd, **kwargs):
        seen["cmd"] = cmd
        trial = tmp_path / "quickstart" / "quickstart_00000"
        trial.mkdir(parents=True)
        rows = [{"time_this_iter_s": 0.5, "time_total_s": 0.5 * (i + 1), "env_runners": {"num_env_steps_sampled": 4096},
                 "spade": {"phase_s": {"learn": 0.4, "sample_wait": 0.1}}} for i in range(5)]
        (trial / "result.json").write_text("\n".join(json.dumps(r) for r in rows) + "\n")
        return subprocess.CompletedProcess(cmd, 0, "", "")

    monkeypatch.setattr(shipped_speed.subprocess, "run", fake_run)
    row = shipped_speed.run_config("quickstart", 7, tmp_path)
    cmd = " ".join(seen["cmd"])
    assert "-m spade_rllib.train --config" in cmd and cmd.split("--config ")[1].split()[0].endswith("quickstart.yaml")
    for part in ("training.stop.time_s=7", "training.stop.env_steps=null", "--final-eval-games 0", "--final-replays 0",
                 f"experiment.storage_path={tmp_path}"):
        assert part in cmd, cmd
    assert row["iterations"] == 3 and row["sps"] == pytest.approx(8192.0) and row["config"] == "tune_configs/quickstart.yaml"
    assert row["phase_share"]["learn"] == pytest.approx(0.8)

    def failing(cmd, **kwargs):
        return subprocess.CompletedProcess(cmd, 2, "config error: agent.lrr: unknown key\n", "")

    monkeypatch.setattr(shipped_speed.subprocess, "run", failing)
    with pytest.raises(RuntimeError, match="train exited 2: config error"):
        shipped_speed.run_config("flagship", 7, tmp_path)


@pytest.mark.parametrize("seconds, stock, flag", [(float("nan"), 20.0, "--seconds"), (0.0, 20.0, "--seconds"),
                                                  (45.0, float("inf"), "--stock-seconds"), (45.0, -1.0, "--stock-seconds")])
def test_shipped_bench_refuses_bad_durations_before_running(seconds, stock, flag, capsys):
    from bench.speed.shipped_speed import shipped_rows

    with pytest.raises(SystemExit) as e:
        shipped_rows(["quickstart"], seconds, stock_seconds=stock)
    err = capsys.readouterr().err
    assert e.value.code == 2 and err.startswith(flag) and err.count("\n") == 1, err
