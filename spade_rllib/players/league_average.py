"""The league as ONE network: ``league:average``, main's architecture distilled from a league mixture.

NFSP's average-policy network as a league feature. `load_policy(checkpoint, "league:average")` (so `play`,
`evaluate --league-player average`, `export --module league:average`) returns an `AveragePolicy`: a plain
`spade_rllib.players.policy.Policy` of main's module class whose weights were fitted, by supervised learning
(cross-entropy), to the league's mixture (`DistillSettings.source`, default ``uniform``: main's snapshots and
main, fictitious play's average). Ray-free; torch on the CPU.

The targets:

- On an OpenSpiel game (Kuhn, Leduc, ``openspiel:<name>``) they are exact: the mixture's reach-weighted average
  strategy (`spade_rllib.games.exploitability.average_table`) at every information state, fitted full-batch
  (each information state weighted equally) until the largest probability error is below
  `EXACT_TOLERANCE` or `steps` run out. `AveragePolicy.table` is then the network's own strategy (what
  ``average_policy.json`` of its export holds) and `distilled` records both exploitabilities.
- Elsewhere (Connect Four, CaptureTheFlag, ...): `games` games of the mixture against itself are played with
  the run's env setup (each team draws one member per game, by weight, and samples its actions from its
  softmax); every decision records the observation, its legal mask and the acting member's action
  probabilities. Fitting them by cross-entropy, each visit weighted 1, gives at every state the members'
  probabilities weighted by how often each member reaches it: the reach-weighted average, estimated. Every
  10th game is held out of the fit: ``distilled["sampled"]["heldout_kl"]`` is the network's mean KL from the
  members' probabilities on those decisions (``heldout_kl_main``: main's, for scale).

The network is the league's *average strategy*: play it by sampling its softmax (on an OpenSpiel game it
always samples, as `MixturePolicy` does); its argmax is its most likely action, not the mixture.

Refused in one line before any distillation: a recurrent (LSTM) main (a recurrent average needs sequence
training over the members' hidden states; not offered), Box actions, bad settings (`check_settings`).

Cache: the fitted weights are written (atomically) to ``<trial dir>/league_average/`` keyed by the checkpoint,
its files' sizes and times, and the settings, so loading ``league:average`` again (another evaluation worker, a
second run of `export`) reads them instead of fitting again; a run directory that cannot be written just
means no cache.
"""
from __future__ import annotations

import copy
import hashlib
import json
import math
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any, Callable, Optional

import numpy as np

from spade_rllib.artifacts.checkpoint_layout import PolicyLoadError, resolve_checkpoint
from spade_rllib.league.mixture import MIXTURE_MODES, check_mode

AVERAGE_MODE = "average"
AVERAGE_MODULE_ID = f"league:{AVERAGE_MODE}"
CACHE_DIR = "league_average"
CACHE_VERSION = 2
EXACT_TOLERANCE = 1e-4
"""Exact distillation stops once no probability of the network is further than this from the table's."""
HOW_TO_PLAY = ("one network, main's architecture, distilled from the league's mixture: feed it as the single-module "
               "export and sample an action from the softmax of its logits (its argmax is its most likely action, "
               "not the league's average strategy)")
HELDOUT_EVERY = 10
"""Sampled distillation: every 10th game's decisions are held out of the fit and score it (`heldout_kl`)."""
MAX_DECISIONS = 60_000
"""Sampled distillation stops starting games once this many decisions are recorded (memory: CaptureTheFlag's 826
features a decision make it about 200 MB; `distilled["sampled"]["games"]` says how many games were played)."""
MAX_STEPS_PER_GAME = 10_000
"""A sampled game longer than this many steps is cut (level games end by their own time limit far earlier)."""
LIMITS = {"steps": (1, 1_000_000), "games": (1, 1_000_000), "batch_size": (1, 1_000_000), "seed": (0, 2**31 - 1)}


@dataclass(frozen=True)
class DistillSettings:
    """How ``league:average`` is fitted (`check_settings` refuses bad values in one line)."""

    source: str = "uniform"
    """The mixture distilled: one of `MIXTURE_MODES` (uniform: fictitious play's average)."""
    steps: int = 3000
    """Optimizer steps (Adam): full-batch on an OpenSpiel game, minibatches of `batch_size` elsewhere."""
    lr: float = 0.01
    games: int = 256
    """Sampled distillation (not OpenSpiel): games of the mixture against itself whose decisions are the data."""
    batch_size: int = 512
    seed: int = 0


def check_settings(settings: DistillSettings) -> DistillSettings:
    """`settings` when every value is valid; ValueError (one line: the value, what is allowed) otherwise."""
    try:
        check_mode(settings.source)
    except ValueError as err:
        raise ValueError(f"league:average source: {err}") from None
    for name, (lo, hi) in LIMITS.items():
        value = getattr(settings, name)
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or not lo <= value <= hi:
            raise ValueError(f"league:average {name} = {value!r}: must be an integer in {lo}..{hi:,d}")
    lr = settings.lr
    if isinstance(lr, bool) or not isinstance(lr, (int, float)) or not math.isfinite(lr) or not 0 < lr <= 1:
        raise ValueError(f"league:average lr = {lr!r}: must be a finite number in (0, 1]")
    return settings


# --------------------------------------------------------------------------------------------
# Fitting
# --------------------------------------------------------------------------------------------
def _fresh_module(base):
    """A trainable copy of `base.module` (main's weights as the starting point)."""
    module = copy.deepcopy(base.module)
    module.__dict__.pop("_fast_layers", None)  # views of the copied parameters are rebuilt on first use
    module.train()
    return module


def _log_probs(module, obs_in, mask):
    """Log-probabilities [B, A] of the module's masked logits (illegal actions: -inf)."""
    import torch

    logits = module._forward({"obs": obs_in})["action_dist_inputs"].float()
    logits = torch.where(mask > 0, logits, torch.full_like(logits, -1e9))
    return torch.log_softmax(logits, dim=-1)


def _cross_entropy(logp, target):
    import torch

    return -(torch.where(target > 0, target * logp, torch.zeros_like(logp))).sum(dim=-1)


def fit(base, features: np.ndarray, masks: np.ndarray, targets: np.ndarray, settings: DistillSettings,
        full_batch: bool, tolerance: Optional[float] = None) -> tuple[Any, dict]:
    """(fitted copy of `base.module`, report) minimising the mean cross-entropy of its masked softmax to
    `targets` [N, A] on the rows `features` [N, F] with legal `masks` [N, A]. `full_batch`: every row each step
    (and stop once the largest probability error is below `tolerance`), else minibatches of `batch_size`."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # small networks and batches: one thread is fastest (and kind to a shared machine)
    try:
        return _fit(base, features, masks, targets, settings, full_batch, tolerance)
    finally:
        torch.set_num_threads(threads)


def _fit(base, features, masks, targets, settings: DistillSettings, full_batch: bool, tolerance: Optional[float]):
    import torch

    torch.manual_seed(settings.seed)
    rng = np.random.default_rng(settings.seed)
    module = _fresh_module(base)
    params = [p for p in module.parameters() if p.requires_grad]
    optimizer = torch.optim.Adam(params, lr=settings.lr)
    obs_all, mask_np, _ = base.module_inputs(list(features), list(masks))
    mask_all = torch.from_numpy(mask_np)
    target_all = torch.from_numpy(np.asarray(targets, np.float32))
    n = len(features)

    def rows(index):
        if isinstance(obs_all, dict):
            return {k: v[index] for k, v in obs_all.items()}
        return obs_all[index]

    steps_run, error = 0, float("inf")
    started = time.perf_counter()
    with torch.no_grad():
        initial = float(_cross_entropy(_log_probs(module, obs_all, mask_all), target_all).mean())
    for step in range(settings.steps):
        index = torch.arange(n) if full_batch or n <= settings.batch_size else torch.from_numpy(
            rng.choice(n, settings.batch_size, replace=False))
        logp = _log_probs(module, rows(index), mask_all[index])
        loss = _cross_entropy(logp, target_all[index]).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        steps_run = step + 1
        if full_batch and tolerance is not None and (step % 25 == 24 or step == settings.steps - 1):
            with torch.no_grad():
                error = float((_log_probs(module, obs_all, mask_all).exp() - target_all).abs().max())
            if error < tolerance:
                break
    module.eval()
    module.__dict__.pop("_fast_layers", None)
    with torch.no_grad():
        logp = _log_probs(module, obs_all, mask_all)
        ce = float(_cross_entropy(logp, target_all).mean())
        t = target_all.double()
        entropy = float(-(torch.where(t > 0, t * torch.log(t.clamp_min(1e-300)), torch.zeros_like(t))).sum(-1).mean())
        error = float((logp.exp() - target_all).abs().max())
    return module, {"rows": int(n), "steps": int(steps_run), "initial_cross_entropy": round(initial, 6),
                    "cross_entropy": round(ce, 6),
                    "kl": round(max(ce - entropy, 0.0), 6), "max_abs_prob_error": round(error, 6),
                    "seconds": round(time.perf_counter() - started, 2)}


def kl_to(base, module, features: np.ndarray, masks: np.ndarray, targets: np.ndarray) -> float:
    """Mean KL(targets || module's masked softmax) over the rows (inputs built as `base` builds them)."""
    import torch

    obs_in, mask_np, _ = base.module_inputs(list(features), list(masks))
    t = torch.from_numpy(np.asarray(targets, np.float64))
    with torch.no_grad():
        logp = _log_probs(module, obs_in, torch.from_numpy(mask_np)).double()
        kl = torch.where(t > 0, t * (torch.log(t.clamp_min(1e-300)) - logp), torch.zeros_like(t)).sum(-1).mean()
    return round(float(kl), 6)


def sample_mixture_games(mixture, make_game: Callable[[], Any], games: int, seed: int = 0,
                         max_decisions: int = MAX_DECISIONS) -> tuple[np.ndarray, np.ndarray, np.ndarray, dict]:
    """(features [N, F], masks [N, A], targets [N, A], stats): every decision of `games` games of the
    `MixturePolicy` against itself (one member per team per game, drawn by weight; sampled actions), with the
    acting member's action probabilities (random: uniform over legal actions); ``stats["game_of"]`` [N]: the game
    each decision came from. No game starts once `max_decisions` are recorded."""
    rng = np.random.default_rng(seed)
    weights = mixture.weights / mixture.weights.sum()
    base = mixture.base
    feats, masks, targets, game_of = [], [], [], []
    steps = played = 0
    game = make_game()
    try:
        for g in range(games):
            if len(feats) >= max_decisions:
                break
            played += 1
            obs = game.reset(seed=int(rng.integers(2**31)))
            drawn = [int(rng.choice(len(mixture.members), p=weights)) for _ in game.teams]
            team_of = {agent: t for t, team in enumerate(game.teams) for agent in team}
            for _ in range(MAX_STEPS_PER_GAME):
                if not obs:
                    break
                actions = {}
                for agent, o in obs.items():
                    o = np.asarray(o, np.float32)
                    f, m = (o[:-game.mask_size], o[-game.mask_size:]) if game.mask_size else (o, None)
                    f, m = base._split(f, m)
                    legal = m if m is not None else np.ones(base.num_actions, np.float32)
                    member = mixture.members[drawn[team_of.get(agent, 0)]]
                    if member.policy is None:
                        probs = legal / legal.sum()
                    else:
                        logits = member.policy.logits_batch([f], [m] if m is not None else None)[0]
                        z = np.exp(logits - logits.max())
                        probs = z / z.sum()
                    actions[agent] = int(rng.choice(len(probs), p=probs))
                    feats.append(f)
                    masks.append(legal)
                    targets.append(probs.astype(np.float32))
                    game_of.append(g)
                result = game.step(actions)
                steps += 1
                if result.done:
                    break
                obs = result.obs
    finally:
        close = getattr(game.raw_env, "close", None)
        if callable(close):
            close()
    if not feats:
        raise PolicyLoadError("league:average: the mixture's games recorded no decision")
    return (np.stack(feats), np.stack(masks), np.stack(targets),
            {"games": int(played), "decisions": len(feats), "steps": int(steps), "game_of": np.asarray(game_of)})


# --------------------------------------------------------------------------------------------
# The player
# --------------------------------------------------------------------------------------------
_CLASSES: dict = {}


def _policy_class(Policy: type):
    """`AveragePolicy` over the loader's `Policy` class (handed in as main's type: this module does not import
    `spade_rllib.players.policy`, which loads it)."""
    if Policy in _CLASSES:
        return _CLASSES[Policy]

    class AveragePolicy(Policy):
        """``league:average``: one network of main's architecture playing the league's average strategy (see
        the module docstring); a `Policy`, so it plays, evaluates and exports like any module."""

        mode = AVERAGE_MODE

        def __init__(self, module, base, source: str, distilled: dict, openspiel_game: Optional[str]):
            super().__init__(module, AVERAGE_MODULE_ID, checkpoint=base.checkpoint, env_id=base.env_id)
            from spade_rllib.players.league_player import Member, policy_fn

            self.source = source
            self.distilled = distilled
            self.how_to_play = HOW_TO_PLAY
            self.members = [Member(AVERAGE_MODULE_ID, self, 1.0)]
            self.table: Optional[np.ndarray] = None
            """[S, A] the network's own strategy at every information state (OpenSpiel games), else None."""
            if openspiel_game is not None:
                from spade_rllib.games.exploitability import table_of

                self.table = table_of(policy_fn(self), openspiel_game)

        def act_batch(self, obs_batch, action_masks=None, deterministic: bool = True, rng=None, states=None,
                      rewards=None):
            # On an OpenSpiel game the average strategy's value is in its mixing: it always samples.
            return super().act_batch(obs_batch, action_masks, deterministic and self.table is None, rng, states,
                                     rewards)

        def __repr__(self) -> str:
            return f"AveragePolicy({self.module_id}, from league:{self.source}, checkpoint={str(self.checkpoint)!r})"

    _CLASSES[Policy] = AveragePolicy
    return AveragePolicy


def _cache_file(info, settings: DistillSettings) -> Optional[Path]:
    """Where the fitted weights of this checkpoint and settings are cached (None: no trial directory)."""
    if info.trial_dir is None:
        return None
    stamp = []
    for f in sorted(p for p in info.path.rglob("*") if p.is_file()):
        st = f.stat()
        stamp.append(f"{f.relative_to(info.path)}:{st.st_size}:{st.st_mtime_ns}")
    key = json.dumps({"v": CACHE_VERSION, "checkpoint": str(info.path.resolve()), "files": stamp,
                      "settings": asdict(settings)}, sort_keys=True)
    digest = hashlib.sha256(key.encode()).hexdigest()[:16]
    return Path(info.trial_dir) / CACHE_DIR / f"{info.path.name}-{settings.source}-{digest}.npz"


def _read_cache(path: Optional[Path], module, where: str) -> Optional[dict]:
    """The cached report, with `module` given the cached weights; None when there is no usable cache."""
    if path is None or not path.is_file():
        return None
    try:
        with np.load(path, allow_pickle=False) as data:
            report = json.loads(str(data["__report__"]))
            weights = {k: np.asarray(data[k]) for k in data.files if k != "__report__"}
        from spade_rllib.artifacts.checkpoint_guard import state_problem

        if state_problem(module.get_state(), weights, lambda key: False):
            return None
        module.set_state(weights)
        module.__dict__.pop("_fast_layers", None)
        return report
    except Exception:  # a damaged or foreign cache is fitted again
        return None


def _write_cache(path: Optional[Path], module, report: dict) -> None:
    if path is None:
        return
    import io

    from spade_rllib.artifacts.atomic_io import write_bytes

    state = {k: np.asarray(v.detach().cpu().numpy() if hasattr(v, "detach") else v)
             for k, v in module.get_state().items()}
    buffer = io.BytesIO()
    np.savez(buffer, __report__=np.asarray(json.dumps(report)), **state)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_bytes(path, buffer.getvalue())
    except OSError:  # a read-only run directory: no cache, nothing else lost
        pass


def check_distillable(main) -> None:
    """PolicyLoadError (one line) for a main `league:average` cannot be distilled into."""
    if getattr(main, "recurrent", False):
        raise PolicyLoadError(f"{AVERAGE_MODULE_ID}: main is recurrent (LSTM); distilling the league into one "
                              "recurrent network needs sequence training over each member's hidden state and is not "
                              "offered; use league:uniform|plan|nash (a member drawn per game)")
    if getattr(main, "continuous", False):
        raise PolicyLoadError(f"{AVERAGE_MODULE_ID}: main has Box (continuous) actions; the average network is "
                              "fitted by cross-entropy over discrete actions; use league:uniform|plan|nash")
    if not callable(getattr(main.module, "_forward", None)):
        raise PolicyLoadError(f"{AVERAGE_MODULE_ID}: main's module {type(main.module).__name__} has no _forward "
                              "to fit")


def load_average_policy(checkpoint: str | Path, load: Callable[..., Any], env_id: Optional[str] = None,
                        settings: Optional[DistillSettings] = None, cache: bool = True):
    """The league of `checkpoint` as one network (``league:average``, an `AveragePolicy`): fitted to the
    `settings.source` mixture, or read from the cache. `load` is `spade_rllib.players.policy.load_policy`.
    PolicyLoadError (one line) for bad settings, a checkpoint without a league, a recurrent or Box main."""
    from spade_rllib.players.league_player import checkpoint_league, load_league_policy, openspiel_game
    from spade_rllib.core.outcome import MAIN as MAIN_MODULE

    settings = settings or DistillSettings()
    try:
        check_settings(settings)
    except ValueError as e:
        raise PolicyLoadError(str(e)) from e
    info = resolve_checkpoint(checkpoint)
    checkpoint_league(info.path)  # one line when there is no league, before anything is fitted
    main = load(info.path, MAIN_MODULE, env_id=env_id)
    check_distillable(main)
    env_id = env_id or main.env_id
    game_name = openspiel_game(env_id)
    AveragePolicy = _policy_class(type(main))
    path = _cache_file(info, settings) if cache else None
    module = _fresh_module(main)
    module.eval()
    report = _read_cache(path, module, str(path))
    if report is None:
        mixture = load_league_policy(info.path, settings.source, load, env_id=env_id, seed=settings.seed)
        report = {"source": f"league:{settings.source}", "settings": asdict(settings),
                  "members": {m.member: round(float(m.weight), 12) for m in mixture.members}}
        if game_name is not None:
            from spade_rllib.games.exploitability import info_states

            states = info_states(game_name)
            module, fitted = fit(main, states.tensors, states.masks, mixture.table, settings, full_batch=True,
                                 tolerance=EXACT_TOLERANCE)
            report.update(targets="exact", fit=fitted)
        else:
            from spade_rllib.artifacts.checkpoint_layout import checkpoint_env_setup
            from spade_rllib.games.adapter import make_game_factory

            from spade_rllib.games import find_game

            setup = dict(checkpoint_env_setup(info))
            if find_game(env_id) is not None:  # the catalog's games: their defaults with the run's rules
                from spade_rllib.games.catalog import recorded_game_kwargs

                setup = {**setup, "kwargs": recorded_game_kwargs(setup)}
            make = make_game_factory(env_id, setup.pop("kwargs", None), **setup)
            features, masks, targets, sampled = sample_mixture_games(mixture, make, settings.games, settings.seed)
            held = sampled.pop("game_of") % HELDOUT_EVERY == HELDOUT_EVERY - 1  # every 10th game: held out
            if sampled["games"] < HELDOUT_EVERY or held.all():
                held[:] = False
            fit_rows = ~held
            module, fitted = fit(main, features[fit_rows], masks[fit_rows], targets[fit_rows], settings,
                                 full_batch=False)
            if held.any():  # how close each network is to the mixture on games it was not fitted to
                sampled["heldout_decisions"] = int(held.sum())
                sampled["heldout_kl"] = kl_to(main, module, features[held], masks[held], targets[held])
                sampled["heldout_kl_main"] = kl_to(main, main.module, features[held], masks[held], targets[held])
            report.update(targets="sampled", sampled=sampled, fit=fitted)
        policy = AveragePolicy(module, main, settings.source, report, game_name)
        if game_name is not None:
            from spade_rllib.games.exploitability import exploitability_of_table

            report["mixture_exploitability"] = round(exploitability_of_table(game_name, mixture.table)
                                                     .exploitability, 6)
            report["exploitability"] = round(exploitability_of_table(game_name, policy.table).exploitability, 6)
        _write_cache(path, module, report)
        return policy
    return AveragePolicy(module, main, settings.source, report, game_name)


def openspiel_exploitability(average_policy_file: str | Path) -> float:
    """Exploitability (NashConv / 2) of an exported ``average_policy.json`` by OpenSpiel's own Python code
    (`open_spiel.python.algorithms.exploitability` on a `TabularPolicy` filled from the file): the check that
    does not go through this package's tables."""
    from open_spiel.python import policy as os_policy
    from open_spiel.python.algorithms import exploitability as os_exploitability

    from spade_rllib.envs.openspiel_env import load_game
    from spade_rllib.players.league_export import read_average_policy

    game_name, table = read_average_policy(average_policy_file)
    game = load_game(game_name)
    tabular = os_policy.TabularPolicy(game)
    for key, index in tabular.state_lookup.items():
        tabular.action_probability_array[index] = np.asarray(table[key], np.float64)
    return float(os_exploitability.exploitability(game, tabular))


# --------------------------------------------------------------------------------------------
# Command-line settings (export)
# --------------------------------------------------------------------------------------------
AVERAGE_FLAGS = {"average_from": "source", "average_steps": "steps", "average_games": "games",
                 "average_seed": "seed"}
"""The export options of ``league:average`` (argparse dest -> `DistillSettings` field)."""


def add_arguments(parser) -> None:
    """`--average-from`, `--average-steps`, `--average-games`, `--average-seed` for ``league:average`` (default
    None: `DistillSettings`' value)."""
    d = DistillSettings()
    parser.add_argument("--average-from", default=None, metavar="MODE",
                        help=f"league:average: the mixture distilled, {'|'.join(MIXTURE_MODES)} (default {d.source})")
    parser.add_argument("--average-steps", default=None, metavar="N",
                        help=f"league:average: optimizer steps of the fit (default {d.steps})")
    parser.add_argument("--average-games", default=None, metavar="N",
                        help=f"league:average on games other than OpenSpiel's: self-play games of the mixture "
                             f"recorded as data (default {d.games})")
    parser.add_argument("--average-seed", default=None, metavar="N",
                        help=f"league:average: seed of the games and the fit (default {d.seed})")


def given_flags(args) -> list[str]:
    """The ``--average-*`` options given on the command line."""
    return [f"--{dest.replace('_', '-')}" for dest in AVERAGE_FLAGS if getattr(args, dest, None) is not None]


def _integer(flag: str, text: str) -> int:
    try:
        value = float(text)
    except (TypeError, ValueError):
        raise ValueError(f"{flag} = {text!r}: not a number; give an integer") from None
    if not math.isfinite(value) or value != int(value):
        raise ValueError(f"{flag} = {text!r}: must be a finite integer")
    return int(value)


def settings_from_args(args) -> DistillSettings:
    """The `DistillSettings` of the parsed `add_arguments` options; ValueError (one line naming the option) for a
    bad one."""
    values: dict = {}
    for dest, name in AVERAGE_FLAGS.items():
        text = getattr(args, dest, None)
        if text is None:
            continue
        flag = f"--{dest.replace('_', '-')}"
        values[name] = text if name == "source" else _integer(flag, text)
    settings = replace(DistillSettings(), **values)
    try:
        return check_settings(settings)
    except ValueError as e:
        message = str(e)
        for dest, name in AVERAGE_FLAGS.items():
            message = message.replace(f"league:average {name} ", f"--{dest.replace('_', '-')} ")
        raise ValueError(message) from None


__all__ = ["AVERAGE_FLAGS", "AVERAGE_MODE", "AVERAGE_MODULE_ID", "DistillSettings", "EXACT_TOLERANCE", "HOW_TO_PLAY",
           "add_arguments", "check_distillable", "check_settings", "fit", "given_flags", "load_average_policy",
           "openspiel_exploitability",
           "kl_to", "sample_mixture_games", "settings_from_args"]
