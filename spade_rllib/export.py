"""ONNX export of a policy's inference forward pass: `python -m spade_rllib.export --checkpoint PATH
--module main --out main.onnx`.

The graph is `forward_inference({"obs": obs})["action_dist_inputs"]` of the RLModule:
- input `obs`: float32 [batch, input_size], the flat vector the module takes (for masked envs
  such as connect_four: the board features, then the action mask as the last `num_actions`
  entries; masked logits come out as float32's lowest value);
- for modules with a dict observation (RLlib's action-masking example) two inputs, `obs` with the
  feature shape and `action_mask` [batch, num_actions];
- output `logits`: float32 [batch, num_actions]. Argmax is the deterministic action.
- a continuous module (`Box` actions of size d) has two outputs instead: `mean` and `log_std`,
  float32 [batch, d], the diagonal Gaussian; the mean clipped to the Box's bounds (metadata
  `action_low` / `action_high`) is the deterministic action.
The batch dimension is dynamic. Metadata props record the module id, env id, input style and sizes.

A recurrent module (`agent.model.memory: lstm`) gets its state as inputs and outputs: `state_h`, `state_c` float32
[batch, cell] in (zeros at an episode start), `state_h_out`, `state_c_out` out (feed them back in at
the next step), plus `prev_action` int64 [batch] (Box: float32 [batch, d]) / `prev_reward` float32 [batch] inputs when it was
trained with `lstm_use_prev_action` / `lstm_use_prev_reward`. The check then runs torch and
onnxruntime side by side over a whole 200-step episode, each carrying its own state.
Use it without Ray or RLlib: see docs/evaluation.md.

The file is written atomically (an interrupted export leaves the previous file whole). `--out` may
not lie inside a checkpoint, and an existing file is replaced only when it is an export of this
command (its metadata says so) or with `--force`. A league export's folder belongs to one run: another run's league
is written into it only with `--replace`, and the earlier export's member files are then removed
(`spade_rllib.players.league_export`). `--module league:average` writes such a folder around ONE network distilled from a
mixture (`spade_rllib.players.league_average`; `--average-from`, `--average-steps`, `--average-games`, `--average-seed`,
checked before anything is loaded).
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Sequence

import numpy as np

from spade_rllib.artifacts.atomic_io import atomic_path, write_text
from spade_rllib.cli import add_debug_flag, cli_entry
from spade_rllib.players.league_player import league_mode
from spade_rllib.artifacts.checkpoint_layout import resolve_checkpoint
from spade_rllib.players.policy import DEFAULT_MODULE_ID, Policy, PolicyLoadError, load_policy

OPSET = 17
MIN_OPSET, MAX_OPSET = 9, 20
"""Opsets the export writes for our modules: torch's exporter builds opset 18 and onnx's version converter takes
it to the one asked for (checked for the MLP, masked and LSTM modules at 9, 13, 17 and 20)."""
INPUT_NAME = "obs"
MASK_INPUT_NAME = "action_mask"
OUTPUT_NAME = "logits"
GAUSSIAN_OUTPUTS = ("mean", "log_std")
STATE_INPUTS = ("state_h", "state_c")
STATE_OUTPUTS = ("state_h_out", "state_c_out")
PREV_ACTION_INPUT, PREV_REWARD_INPUT = "prev_action", "prev_reward"
CHECK_STEPS = 200


def output_names(policy: Policy) -> list[str]:
    """The graph's policy outputs: ["logits"], or ["mean", "log_std"] for Box actions."""
    return list(GAUSSIAN_OUTPUTS) if policy.continuous else [OUTPUT_NAME]


def _policy_outputs(policy: Policy, dist_inputs):
    """The action-distribution inputs as the graph's outputs: (logits,) or (mean, log_std)."""
    if not policy.continuous:
        return (dist_inputs,)
    d = policy.num_actions
    return dist_inputs[:, :d], dist_inputs[:, d:]


def _wrapper(policy: Policy):
    import torch

    module = policy.module

    class InferenceForward(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.module = module

        def forward(self, obs, action_mask=None):
            if action_mask is not None:
                obs = {"observations": obs, "action_mask": action_mask}
            out = _policy_outputs(policy, self.module.forward_inference({"obs": obs})["action_dist_inputs"])
            return out[0] if len(out) == 1 else out

    return InferenceForward().eval()


def _recurrent_wrapper(policy: Policy):
    import torch

    module = policy.module

    class RecurrentForward(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.module = module

        def forward(self, obs, state_h, state_c, prev_action=None, prev_reward=None):
            logits, state = self.module.step(obs, {"h": state_h, "c": state_c}, prev_action, prev_reward)
            return (*_policy_outputs(policy, logits), state["h"], state["c"])

    return RecurrentForward().eval()


def recurrent_input_names(policy: Policy) -> list[str]:
    names = [INPUT_NAME, *STATE_INPUTS]
    if policy.module.use_prev_action:
        names.append(PREV_ACTION_INPUT)
    if policy.module.use_prev_reward:
        names.append(PREV_REWARD_INPUT)
    return names


def example_inputs(policy: Policy, batch: int = 2, seed: int = 0) -> tuple[np.ndarray, ...]:
    """Random inputs of the right shapes (masks: a random non-empty subset of legal actions)."""
    rng = np.random.default_rng(seed)
    feats = rng.uniform(-1.0, 1.0, size=(batch, policy.feature_size)).astype(np.float32)
    mask = (rng.uniform(size=(batch, policy.num_actions)) < 0.7).astype(np.float32)
    mask[np.arange(batch), rng.integers(policy.num_actions, size=batch)] = 1.0
    if policy.input_style == "dict_mask":
        return feats.reshape((batch,) + policy._obs_shape), mask
    if policy.input_style == "trailing_mask":
        return (np.concatenate([feats, mask], axis=1),)
    return (feats.reshape((batch,) + policy._obs_shape),)


LOOP_OPSET = 18
"""The least opset of a module whose graph holds a Loop (the exact learned planner, `agent.model.planner: vin`):
onnx's version converter does not convert a Loop's body, so the export writes the exporter's own opset."""


def _has_loop(policy: Policy) -> bool:
    from spade_rllib.rllib.module import _ValueIteration

    module = getattr(policy, "module", None)
    return module is not None and any(isinstance(m, _ValueIteration) and not m.iterations for m in module.modules())


def export_onnx(policy: Policy, out: str | Path, opset: int = OPSET) -> Path:
    """Write `policy`'s inference forward pass as ONNX to `out`; returns the path. A module with the exact learned
    planner is written at opset `LOOP_OPSET` at least (a note says so)."""
    import torch

    out = Path(out)
    if opset < LOOP_OPSET and _has_loop(policy):
        print(f"note: opset {opset} -> {LOOP_OPSET}: this module's exact planner exports as an ONNX Loop, which onnx's "
              f"version converter cannot take below {LOOP_OPSET}", file=sys.stderr)
        opset = LOOP_OPSET
    inputs = tuple(torch.from_numpy(x) for x in example_inputs(policy))
    names = [INPUT_NAME] + ([MASK_INPUT_NAME] if len(inputs) == 2 else [])
    outputs = output_names(policy)
    wrapper = _wrapper(policy)
    if policy.recurrent:
        names = recurrent_input_names(policy)
        outputs = [*output_names(policy), *STATE_OUTPUTS]
        inputs = tuple(torch.from_numpy(x) for x in _recurrent_example(policy, names, np.random.default_rng(0)))
        wrapper = _recurrent_wrapper(policy)
    # The exporter torch recommends (torch.export + onnxscript); it handles the MLP, masked and LSTM modules alike.
    # One dynamic batch dimension shared by every input.
    batch = torch.export.Dim("batch", min=1, max=1 << 20)
    with atomic_path(out) as tmp:
        program = torch.onnx.export(wrapper, inputs, input_names=names, output_names=outputs,
                                    dynamic_shapes=tuple({0: batch} for _ in inputs), opset_version=opset,
                                    dynamo=True, verbose=False)
        program.save(str(tmp))
        _add_metadata(tmp, policy)
    return out


def is_export(path: str | Path) -> bool:
    """True when `path` is an ONNX file this command wrote (its metadata names module and input style)."""
    try:
        import onnx

        keys = {prop.key for prop in onnx.load(str(path), load_external_data=False).metadata_props}
    except Exception:
        return False
    return {"module_id", "input_style", "feature_size"} <= keys


def _add_metadata(path: Path, policy: Policy) -> None:
    import onnx

    model = onnx.load(str(path))
    meta = {"module_id": policy.module_id, "env_id": policy.env_id or "", "input_style": policy.input_style,
            "feature_size": str(policy.feature_size), "num_actions": str(policy.num_actions),
            "checkpoint": str(policy.checkpoint or "")}
    if policy.continuous:
        meta["action_low"] = json.dumps(policy.action_low.tolist())
        meta["action_high"] = json.dumps(policy.action_high.tolist())
    for key, value in meta.items():
        prop = model.metadata_props.add()
        prop.key, prop.value = key, value
    onnx.save(model, str(path))


def onnx_logits(path: str | Path, *inputs: np.ndarray) -> np.ndarray:
    """Run the exported model with onnxruntime (CPU); returns the logits (Box: [mean, log_std]
    side by side, the module's `action_dist_inputs`)."""
    import onnxruntime as ort

    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    feed = {i.name: x.astype(np.float32) for i, x in zip(session.get_inputs(), inputs)}
    have = {o.name for o in session.get_outputs()}
    names = list(GAUSSIAN_OUTPUTS) if set(GAUSSIAN_OUTPUTS) <= have else [OUTPUT_NAME]
    out = session.run(names, feed)
    return out[0] if len(out) == 1 else np.concatenate(out, axis=1)


def _recurrent_example(policy: Policy, names: list[str], rng: np.random.Generator, batch: int = 2) -> list[np.ndarray]:
    """One step's inputs: random obs (with a legal mask), random states, previous action / reward."""
    cell = int(policy.module.cell_size)
    (obs,) = example_inputs(policy, batch=batch, seed=int(rng.integers(2**31)))
    out = [obs, rng.normal(size=(batch, cell)).astype(np.float32), rng.normal(size=(batch, cell)).astype(np.float32)]
    if PREV_ACTION_INPUT in names:
        out.append(rng.normal(size=(batch, policy.num_actions)).astype(np.float32) if policy.continuous
                   else rng.integers(policy.num_actions, size=batch).astype(np.int64))
    if PREV_REWARD_INPUT in names:
        out.append(rng.normal(size=batch).astype(np.float32))
    return out


def check_recurrent_episode(policy: Policy, path: str | Path, observations: Sequence[np.ndarray] | None = None,
                            steps: int = CHECK_STEPS, seed: int = 1) -> float:
    """Max |torch - onnxruntime| over logits and states of one episode of `steps` steps (or of the
    given flat observations, [batch, input_size] each), each side feeding back its own state and
    both playing the argmax action (Box: the mean) as the next previous action."""
    import onnxruntime as ort
    import torch

    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    names = [i.name for i in session.get_inputs()]
    rng = np.random.default_rng(seed)
    if observations is None:
        observations = [example_inputs(policy, batch=2, seed=int(rng.integers(2**31)))[0] for _ in range(steps)]
    batch = observations[0].shape[0]
    cell = int(policy.module.cell_size)
    zeros = np.zeros((batch, cell), np.float32)
    ort_state, torch_state = (zeros, zeros), (zeros, zeros)
    prev_a = np.zeros((batch, policy.num_actions), np.float32) if policy.continuous else np.zeros(batch, np.int64)
    prev_r = np.zeros(batch, np.float32)
    heads = output_names(policy)
    wrapper = _recurrent_wrapper(policy)
    worst = 0.0
    for obs in observations:
        extra = {PREV_ACTION_INPUT: prev_a, PREV_REWARD_INPUT: prev_r}
        feed = {INPUT_NAME: obs.astype(np.float32), STATE_INPUTS[0]: ort_state[0], STATE_INPUTS[1]: ort_state[1]}
        feed.update({k: v for k, v in extra.items() if k in names})
        *o_heads, oh, oc = session.run([*heads, *STATE_OUTPUTS], feed)
        o_logits = np.concatenate(o_heads, axis=1)
        args = [torch.from_numpy(obs.astype(np.float32)), torch.from_numpy(torch_state[0]), torch.from_numpy(torch_state[1])]
        if PREV_ACTION_INPUT in names:
            args.append(torch.from_numpy(prev_a))
        if PREV_REWARD_INPUT in names:
            args.append(torch.from_numpy(prev_r))
        with torch.no_grad():
            *t_heads, th, tc = (x.numpy() for x in wrapper(*args))
        t_logits = np.concatenate(t_heads, axis=1)
        worst = max(worst, float(np.max(np.abs(o_logits - t_logits))), float(np.max(np.abs(oh - th))),
                    float(np.max(np.abs(oc - tc))))
        ort_state, torch_state = (oh, oc), (th, tc)
        prev_a = (t_logits[:, :policy.num_actions].copy() if policy.continuous
                  else t_logits.argmax(axis=1).astype(np.int64))
        prev_r = rng.normal(size=batch).astype(np.float32)
    return worst


def export_league(policy, out_dir: str | Path, opset: int = OPSET, check: bool = True):
    """Write the league as one player (a `MixturePolicy`, or the `AveragePolicy` of ``league:average``: one member,
    itself) into the directory `out_dir` (`spade_rllib.players.league_export` says what each file holds); returns its
    `LeagueExport`."""
    from spade_rllib.players.league_export import (
        AVERAGE_POLICY_FILE, FORMAT, HOW_TO_PLAY, MIXTURE_FILE, VERSION, LeagueExport, export_files, member_file, read_manifest,
        run_of, write_average_policy,
    )
    from spade_rllib.players.league_player import openspiel_game

    out = Path(out_dir)
    earlier = read_manifest(out)  # its files not written again are removed once the new manifest is in place
    out.mkdir(parents=True, exist_ok=True)
    members = []
    for m in policy.members:
        entry = {"member": m.member, "weight": round(float(m.weight), 12), "onnx": None}
        if m.policy is not None:
            path = export_onnx(m.policy, out / member_file(m.member), opset=opset)
            entry["onnx"] = path.name
            if check:
                entry["max_abs_diff_vs_torch"] = check_exported(m.policy, path)
        members.append(entry)
    average = None
    if policy.table is not None:
        average = write_average_policy(openspiel_game(policy.env_id), policy.table, out / AVERAGE_POLICY_FILE)
    manifest = {"format": FORMAT, "version": VERSION, "module": policy.module_id, "mode": policy.mode,
                "env_id": policy.env_id, "checkpoint": str(policy.checkpoint or ""), "run": run_of(policy.checkpoint),
                "members": members, "average_policy": average.name if average is not None else None,
                "how_to_play": getattr(policy, "how_to_play", HOW_TO_PLAY)}
    if getattr(policy, "distilled", None):  # league:average: how the one network was fitted, and its figures
        manifest["distilled"] = policy.distilled
    write_text(out / MIXTURE_FILE, json.dumps(manifest, indent=1) + "\n")  # last: its presence means whole
    if earlier is not None:
        for name in sorted(export_files(earlier) - export_files(manifest)):
            (out / name).unlink(missing_ok=True)
    return LeagueExport(out, tuple(members), average)


def check_exported(policy: Policy, out: str | Path) -> float:
    """The largest absolute difference between onnxruntime's outputs of `out` and torch's (a recurrent module:
    over a whole episode, each carrying its own state)."""
    if policy.recurrent:
        return check_recurrent_episode(policy, out)
    inputs = example_inputs(policy, batch=8, seed=1)
    return float(np.max(np.abs(onnx_logits(out, *inputs) - torch_logits(policy, *inputs))))


def torch_logits(policy: Policy, *inputs: np.ndarray) -> np.ndarray:
    import torch

    with torch.no_grad():
        out = _wrapper(policy)(*(torch.from_numpy(x) for x in inputs))
    return np.concatenate([x.numpy() for x in out], axis=1) if isinstance(out, tuple) else out.numpy()


@cli_entry(user_errors=(PolicyLoadError,))
def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m spade_rllib.export", description=__doc__.split("\n")[0])
    p.add_argument("--checkpoint", required=True, help="algorithm checkpoint or trial directory")
    p.add_argument("--module", default=DEFAULT_MODULE_ID,
                   help="module id, league member, or the league as one player: league:uniform|plan|nash, or "
                        "league:average (one network distilled from a mixture; --average-*) (default: main)")
    p.add_argument("--out", required=True,
                   help="output .onnx file; for league:<mode> a directory (mixture.json, one .onnx per member, "
                        "average_policy.json on OpenSpiel games)")
    p.add_argument("--opset", type=int, default=OPSET)
    p.add_argument("--force", action="store_true", help="overwrite --out even when it is not an earlier export")
    p.add_argument("--replace", action="store_true",
                   help="league:<mode>: write over an export of another run in --out (its member files are removed)")
    p.add_argument("--no-check", action="store_false", dest="check",
                   help="skip comparing onnxruntime's logits with torch's")
    from spade_rllib.players import league_average

    league_average.add_arguments(p)
    add_debug_flag(p)
    args = p.parse_args(argv)
    if not MIN_OPSET <= args.opset <= MAX_OPSET:
        print(f"error: --opset = {args.opset}: out of range, allowed {MIN_OPSET}..{MAX_OPSET}", file=sys.stderr)
        return 2
    from spade_rllib.artifacts.output_paths import check_fresh_directory, check_not_in_checkpoint, check_output_path, check_overwrite

    try:
        league = league_mode(args.module) is not None
    except PolicyLoadError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    average = None  # league:average's DistillSettings
    if args.module == league_average.AVERAGE_MODULE_ID:
        try:
            average = league_average.settings_from_args(args)
        except ValueError as e:
            print(f"error: {e}", file=sys.stderr)
            return 2
    elif league_average.given_flags(args):
        print(f"error: {', '.join(league_average.given_flags(args))}: only for --module league:average, not "
              f"{args.module!r}", file=sys.stderr)
        return 2
    check_output_path(args.out, "--out", directory=league)  # before loading anything
    check_not_in_checkpoint(args.out, "--out")
    if league:
        from spade_rllib.players.league_export import export_run, read_manifest, run_of

        earlier = read_manifest(args.out)
        if earlier is None:
            check_fresh_directory(args.out, "--out", args.force)
        elif not args.replace:  # an export folder belongs to one run
            try:
                run = run_of(resolve_checkpoint(args.checkpoint).path)
            except PolicyLoadError as e:
                print(f"error: {e}", file=sys.stderr)
                return 2
            if export_run(earlier) != run:
                print(f"error: --out = {args.out!r} holds the league export of another run ({export_run(earlier) or 'unknown'}); "
                      f"this checkpoint is of {run}; pass --replace to replace it (its member files are removed), "
                      "or give another --out", file=sys.stderr)
                return 2
    else:
        check_overwrite(args.out, "--out", args.force, is_export, "an ONNX export of this command")
    try:
        policy = (load_policy(args.checkpoint, args.module) if average is None
                  else league_average.load_average_policy(args.checkpoint, load_policy, settings=average))
    except PolicyLoadError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if league:
        written = export_league(policy, args.out, opset=args.opset, check=args.check)
        print(json.dumps({"out": str(written.out_dir), "module": policy.module_id, "members": list(written.members),
                          "average_policy": str(written.average_policy) if written.average_policy else None,
                          **({"distilled": policy.distilled} if average is not None else {})}))
        return 0
    out = export_onnx(policy, args.out, opset=args.opset)
    summary = {"out": str(out), "module": policy.module_id, "input_style": policy.input_style,
               "input_size": policy.input_size, "num_actions": policy.num_actions}
    if args.check:
        summary["max_abs_diff_vs_torch"] = check_exported(policy, out)
        if policy.recurrent:
            summary["checked_steps"] = CHECK_STEPS
    print(json.dumps(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
