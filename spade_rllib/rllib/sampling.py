"""The env runner's step loop: `LaneStepping`, mixed into `SpadeEnvRunner`.

Every step groups the acting agents of all active lanes by controller (a trained module, a frozen
slot, a live module, "random" or a scripted bot), makes ONE batched forward pass per network and one
sampling call for all their rows, records the learners' transitions, and steps every lane. At an
episode's start the learner, its opponent and its seat come from the `OpponentPlan` as a pure
function of (worker_index, env_index, episode_number); at its end an `EpisodeOutcome` is built (and
RLlib's episode metrics logged for main).

Recurrent networks (`agent.model.memory: lstm`): a seat's state starts at zeros with each episode, is reset when the
driver swaps the weights of the slot playing it, and advances only when that agent acts, so in
turn-based games it carries across the opponent's moves (counted in the agent's own steps). The
chunk's bootstrap row gets the state after its last step.
"""
from __future__ import annotations

from collections import deque

import logging
import math
from typing import Optional

import numpy as np

from ray.rllib.utils.framework import try_import_torch
from ray.rllib.utils.metrics import EPISODE_LEN_MEAN, EPISODE_RETURN_MEAN

from spade_rllib.core.outcome import MAIN, RESULTS, EpisodeOutcome
from spade_rllib.games.adapter import LEVEL_RESET_KEYS, Game
from spade_rllib.games.roles import role_module_id, role_names
from spade_rllib.rllib.action_sampling import sample_actions, sample_gaussian
from spade_rllib.rllib.health import env_fault, first_non_finite_row
from spade_rllib.rllib.lanes import LaneStates, LearnerTrajectory, curriculum_level
from spade_rllib.rllib.plan import BOT_PREFIX, LIVE_PREFIX, MIRROR, RANDOM, SLOT_PREFIX, OpponentPlan

torch, nn = try_import_torch()
logger = logging.getLogger("spade_rllib.rllib.runner")  # the runner's warnings keep their logger name

# Reset-option extras a level source may return that name fields of the episode's outcome.
OUTCOME_EXTRA_FIELDS = ("level_spec", "heldout_level")
METRICS_WINDOW = 200  # episodes over which W/D/L rates and returns are averaged per runner


class LaneStepping:
    """`SpadeEnvRunner`'s step loop (it uses the runner's plan, modules, slots and metrics)."""

    def _role_side(self, module_id: str) -> int:
        """A role module's side (the index of its role)."""
        return self._side_of_module[module_id]

    def _start_episode(self, lanes: LaneStates, i: int, seed: Optional[int] = None, opponent: Optional[str] = None,
                       main_team: Optional[int] = None, options: Optional[dict] = None, extras: Optional[dict] = None,
                       learner: Optional[str] = None) -> None:
        lanes.episode_number[i] += 1
        key = (self.worker_index, i, lanes.episode_number[i])
        learner = learner or MAIN
        if opponent is None:
            learner, opponent = self.plan.pick_matchup(key) if lanes.num_teams > 1 else (MAIN, MIRROR)
            # A role's main always plays its role; in symmetric games main's team alternates.
            main_team = self._role_side(learner) if self.roles else OpponentPlan.main_team(key, lanes.num_teams)
            if learner not in self.learner_ids:
                raise ValueError(f"opponent plan names learner {learner!r}; this runner trains {', '.join(self.learner_ids)}")
        if opponent.startswith(SLOT_PREFIX) and opponent not in self.slot_modules:
            if opponent not in self._warned_empty_slots:
                self._warned_empty_slots.add(opponent)
                logger.warning("opponent %s has no weights on runner %d yet; playing 'random' instead", opponent, self.worker_index)
            opponent = RANDOM
        game = lanes.games[i]
        extras = dict(extras or {})
        if options is None and game.is_level_game:
            options = self.fixed_reset_options
            if self.level_source is not None:
                if getattr(self.level_source, "opponent_aware", False):  # joint curriculum: levels per co-player
                    options = self.level_source.reset_options(key, opponent=self._member_of(opponent)) or options
                else:
                    options = self.level_source.reset_options(key) or options
            elif options is None and lanes.record and (pool := self._training_level_pool()):
                options = {"level": pool[int(self._rng.integers(len(pool)))]}
        env_options = None
        if options:
            env_options = {k: v for k, v in options.items() if k in LEVEL_RESET_KEYS} or None
            extras.update({k: v for k, v in options.items() if k not in LEVEL_RESET_KEYS})
        obs = game.reset(seed=seed, options=env_options)
        lanes.active[i] = True
        lanes.opponent[i] = opponent
        lanes.member[i] = self._member_of(opponent)
        lanes.learner[i] = learner
        lanes.main_team[i] = int(main_team or 0)
        ctrl = {}
        if self.roles:  # each agent's own role main, or the opponent where the agent is not the learner's role
            for a in game.agents:
                own = self.module_of_agent[a]
                ctrl[a] = own if (own == learner or opponent == MIRROR) else opponent
        else:
            for t, team in enumerate(game.teams):
                for a in team:
                    ctrl[a] = learner if (t == lanes.main_team[i] or opponent == MIRROR) else opponent
        lanes.controller[i] = ctrl
        lanes.recorders[i] = frozenset(c for c in ctrl.values() if c in self.learner_ids)
        lanes.pending[i] = obs
        lanes.last_obs[i] = dict(obs)
        lanes.traj[i] = {a: LearnerTrajectory() for a, c in ctrl.items() if c in lanes.recorders[i]} if lanes.record else {}
        lanes.agent_return[i] = {a: 0.0 for a in ctrl}
        lanes.length[i] = 0
        lanes.extras[i] = extras
        lanes.state[i] = {}
        lanes.prev_action[i] = {}
        lanes.prev_reward[i] = {}

    def _member_of(self, opponent: str) -> str:
        """The league member an opponent id stands for now (slots: their member; live modules: the module)."""
        if opponent.startswith(LIVE_PREFIX):
            return opponent[len(LIVE_PREFIX):]
        return self.slot_members.get(opponent, opponent)

    def _module_for(self, who: str):
        if who in self.learner_ids:
            return self.module[who]
        if who.startswith(SLOT_PREFIX):
            return self.slot_modules[who]
        if who.startswith(LIVE_PREFIX) and who[len(LIVE_PREFIX):] in self.learner_ids:
            return self.module[who[len(LIVE_PREFIX):]]
        return None

    def _logits(self, who: str, obs: np.ndarray) -> np.ndarray:
        module = self._module_for(who)
        if module is None:
            raise KeyError(who)
        with torch.no_grad():
            return module.fast_logits(torch.from_numpy(obs)).numpy()

    def _recurrent_logits(self, module, lanes: LaneStates, members: list, obs: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """One step of a recurrent network for its seats: (logits, the state rows they acted from,
        previous actions, previous rewards); the seats' states advance in `lanes.state`."""
        cell = module.cell_size
        zeros = np.zeros(2 * cell, np.float32)
        state = np.stack([lanes.state[i].get(agent, zeros) for i, agent in members])
        if self._continuous:
            no_action = np.zeros(self._act_space.shape, np.float32)
            prev_a = np.stack([lanes.prev_action[i].get(agent, no_action) for i, agent in members]).astype(np.float32, copy=False)
        else:
            prev_a = np.fromiter((lanes.prev_action[i].get(agent, 0) for i, agent in members), np.int64, len(members))
        prev_r = np.fromiter((lanes.prev_reward[i].get(agent, 0.0) for i, agent in members), np.float32, len(members))
        st = torch.from_numpy(state)
        with torch.no_grad():
            logits, new = module.step(torch.from_numpy(obs), {"h": st[:, :cell], "c": st[:, cell:]},
                                      torch.from_numpy(prev_a), torch.from_numpy(prev_r))
        new_state = torch.cat([new["h"], new["c"]], dim=1).numpy()
        for j, (i, agent) in enumerate(members):
            lanes.state[i][agent] = new_state[j]
            lanes.prev_reward[i][agent] = 0.0  # rewards from here on belong to this step's action
        return logits.numpy(), state, prev_a, prev_r

    def _sample_actions(self, logits: np.ndarray, greedy: bool) -> tuple[np.ndarray, np.ndarray]:
        """Actions and log-probabilities for the rows of every network of a step, in one call: numpy's
        per-call overhead, not the arithmetic, is what costs at these sizes (Box: Gaussian samples, unclipped)."""
        if self._continuous:
            return sample_gaussian(logits, self._rng, greedy)
        return sample_actions(logits, self._rng, greedy)

    def _random_action(self, game: Game, obs: np.ndarray, agent: Optional[str] = None):
        return game.random_action(obs, self._rng, agent)

    def _bot(self, name: str, lanes: LaneStates, lane: int, agent: str, teacher: bool = False):
        """The scripted bot `name` playing (or, `teacher`, labelling) `agent` in lane `lane` of the training or the
        evaluation lanes: one instance per seat, as bots keep state across the steps of their episode (the hybrid's
        guard spell), so evaluation games between two `sample()` calls leave the training games' bots alone; kept
        across episodes."""
        key = (name, lanes.record, lane, agent, teacher)
        bot = self._bots.get(key)
        if bot is None:
            from spade_rllib.games import make_bot

            bot = make_bot(name, seed=int(self._rng.integers(2**31)), env_id=self.spec.env_id)
            self._bots[key] = bot
        return bot

    def _step_lanes(self, lanes: LaneStates, episodes: Optional[list], greedy: bool, random_actions: bool = False,
                    eval_queue: Optional[tuple] = None) -> tuple[int, int]:
        """One step of every active lane. Returns (env steps, finished episodes)."""
        # 1) group the acting agents by controller
        groups: dict[str, list[tuple[int, str]]] = {}
        for i in range(lanes.n):
            if not lanes.active[i]:
                continue
            ctrl = lanes.controller[i]
            for agent in lanes.pending[i]:
                who = ctrl[agent]
                if random_actions:
                    who = RANDOM
                groups.setdefault(who, []).append((i, agent))  # "mirror" was resolved to the learner at reset
        actions: list[dict] = [{} for _ in range(lanes.n)]
        learner_out: dict[tuple[int, str], tuple] = {}
        network: list[tuple] = []  # (who, members, obs, logits) of each network controller
        recurrent: dict[str, tuple] = {}  # who -> (state rows, previous actions, previous rewards)
        for who, members in groups.items():
            if who == RANDOM:
                for i, agent in members:
                    actions[i][agent] = self._random_action(lanes.games[i], lanes.pending[i][agent], agent)
            elif who.startswith(BOT_PREFIX):
                name = who[len(BOT_PREFIX):]
                for i, agent in members:
                    actions[i][agent] = int(self._bot(name, lanes, i, agent).act(lanes.games[i].raw_env, agent))
            else:
                obs = np.stack([lanes.pending[i][agent] for i, agent in members])
                bad = first_non_finite_row(obs)  # NaN in, NaN loss out: name the env, agent and step instead
                if bad >= 0:
                    i, agent = members[bad]
                    raise env_fault(self.spec.env_id, i, lanes.length[i], agent, "observation holds NaN/inf")
                module = self._module_for(who)
                if module is not None and getattr(module, "use_lstm", False):
                    logits, *rec = self._recurrent_logits(module, lanes, members, obs)
                    recurrent[who] = rec
                    network.append((who, members, obs, logits))
                else:
                    network.append((who, members, obs, self._logits(who, obs)))
        if network:  # one sampling pass over every network's rows (main, league slots, live modules)
            all_logits = network[0][3] if len(network) == 1 else np.concatenate([g[3] for g in network])
            acts, logp = self._sample_actions(all_logits, greedy)
            row = 0
            for who, members, obs, logits in network:
                rec = recurrent.get(who)
                for j, (i, agent) in enumerate(members):
                    a = acts[row] if self._continuous else int(acts[row])
                    actions[i][agent] = a
                    if rec is not None:
                        lanes.prev_action[i][agent] = a
                    if lanes.record and who in lanes.recorders[i]:
                        learner_out[(i, agent)] = (obs[j], a, float(logp[row]), logits[j],
                                                   None if rec is None else (rec[0][j], rec[1][j] if self._continuous else int(rec[1][j]),
                                                                                 float(rec[2][j])))
                    row += 1
        # 2) record the learners' decisions, step every lane
        env_steps = finished = 0
        for i in range(lanes.n):
            if not lanes.active[i]:
                continue
            if lanes.record:
                trajs = lanes.traj[i]
                for agent in actions[i]:
                    tr = trajs.get(agent)
                    if tr is None and lanes.controller[i].get(agent) in lanes.recorders[i]:
                        tr = trajs[agent] = LearnerTrajectory()  # an agent that joined (or came back) mid-episode
                    if tr is not None:
                        o, a, lp, lg, rec = learner_out[(i, agent)]
                        if self.spec.teacher:  # kickstarting: the teacher's action in the state the learner acted in
                            tr.teacher.append(int(self._bot(self.spec.teacher, lanes, i, agent, teacher=True)
                                                  .act(lanes.games[i].raw_env, agent)))
                        tr.obs.append(o)
                        tr.actions.append(a)
                        tr.logp.append(lp)
                        tr.logits.append(lg)
                        tr.rewards.append(0.0)
                        if rec is not None:
                            tr.states.append(rec[0])
                            tr.prev_actions.append(rec[1])
                            tr.prev_rewards.append(rec[2])
            try:
                res = lanes.games[i].step(actions[i])
            except Exception as e:  # the env's own error, with where it happened
                raise env_fault(self.spec.env_id, i, lanes.length[i], sorted(actions[i]) or None,
                                f"step raised {e.__class__.__name__}: {' '.join(str(e).split())}") from e
            env_steps += 1
            lanes.length[i] += 1
            ret = lanes.agent_return[i]
            prev_reward = lanes.prev_reward[i]
            for agent, r in res.rewards.items():
                if not math.isfinite(r):
                    raise env_fault(self.spec.env_id, i, lanes.length[i], agent, f"reward is {r}")
                if agent in ret:
                    ret[agent] += r
                if agent in prev_reward:
                    prev_reward[agent] += r
                if lanes.record:
                    tr = lanes.traj[i].get(agent)
                    if tr is not None and tr.rewards:
                        tr.rewards[-1] += r
            lanes.pending[i] = res.obs
            lanes.last_obs[i].update(res.obs)
            if res.ended and not res.done:
                self._end_agents(lanes, i, res, episodes)
            if res.done:
                finished += 1
                if res.final_obs:
                    lanes.last_obs[i].update(res.final_obs)
                records = self._finish_episode(lanes, i, res, episodes)
                lanes.active[i] = False
                if eval_queue is None:
                    self._outcomes.extend(records)
                    self._start_episode(lanes, i)
                else:
                    queue, levels, results = eval_queue
                    results.extend(records)
                    if queue:
                        self._start_eval_episode(lanes, i, queue.popleft(), levels)
        return env_steps, finished

    def _end_agents(self, lanes: LaneStates, i: int, res, episodes: Optional[list]) -> None:
        """Agents whose own episode ended while the others play on (dead, or out of time): emit the
        learner's transitions of each, terminated (no bootstrap) or truncated (bootstrap from its last obs)."""
        lanes.last_obs[i].update(res.final_obs)
        for agent, truncated in res.ended.items():
            state = lanes.state[i].pop(agent, None)  # a seat that comes back starts a fresh memory
            lanes.prev_action[i].pop(agent, None)
            lanes.prev_reward[i].pop(agent, None)
            tr = lanes.traj[i].pop(agent, None) if lanes.record else None
            if tr is None or not tr.actions or episodes is None:
                continue
            tr.obs.append(lanes.last_obs[i].get(agent, tr.obs[-1]))
            if tr.states:
                tr.boot_state = state if state is not None else np.zeros_like(tr.states[-1])
            episodes.append(self._make_episode(lanes.controller[i][agent], agent, tr, terminated=not truncated,
                                               truncated=bool(truncated), level=curriculum_level(lanes, i)))

    def _finish_episode(self, lanes: LaneStates, i: int, res, episodes: Optional[list]) -> list[EpisodeOutcome]:
        """The episode's outcome records: one, of its learner; in a role game's mirror episode one per
        role main (each main learned from its own role's agents)."""
        if lanes.record and episodes is not None:
            for agent, tr in lanes.traj[i].items():
                if tr.actions:
                    tr.obs.append(lanes.last_obs[i].get(agent, tr.obs[-1]))
                    if tr.states:
                        tr.boot_state = lanes.state[i].get(agent)
                    episodes.append(self._make_episode(lanes.controller[i][agent], agent, tr, terminated=not res.truncated,
                                                       truncated=res.truncated, level=curriculum_level(lanes, i)))
            lanes.traj[i] = {}
        if self.roles and lanes.opponent[i] == MIRROR:
            learners = [role_module_id(r) for r in role_names(self.roles)]
        else:
            learners = [lanes.learner[i]]
        return [self._outcome(lanes, i, res, learner) for learner in learners]

    def _outcome(self, lanes: LaneStates, i: int, res, learner: str) -> EpisodeOutcome:
        returns = lanes.agent_return[i]
        team_returns = [sum(float(returns[a]) for a in team) / len(team) for team in lanes.sides]  # np.mean's value, 10x cheaper
        info = res.info or {}
        main_team = self._role_side(learner) if self.roles else lanes.main_team[i]
        opponent = lanes.opponent[i]
        member = lanes.member[i]
        swapped = self._member_of(opponent) != member  # slot reloaded with another member mid-episode
        extras = lanes.extras[i]
        fields = {k: extras[k] for k in OUTCOME_EXTRA_FIELDS if k in extras}
        if lanes.num_teams >= 2:
            record = EpisodeOutcome.from_final_info(
                info, team_returns=tuple(team_returns), length=lanes.length[i], truncated=res.truncated,
                learner_team=main_team, learner=learner, opponent=member,
                opponent_swapped=swapped,  # two policies played that seat: the league ignores it
                **fields)
        else:  # one team: nobody to win against, no opponent
            success = info.get("success", info.get("is_success"))
            record = EpisodeOutcome(winner=None, reason="timeout" if res.truncated else "terminal",
                                    length=lanes.length[i], learner=learner, returns=(team_returns[0],),
                                    success=None if success is None else bool(success), **fields)
        if lanes.record and learner == self.learner_ids[0]:  # RLlib's episode metrics describe main (the first role's)
            self._log_episode_metrics(record, member)
        return record

    def _metrics_window(self) -> int:
        return max(1, METRICS_WINDOW // max(1, self.config.num_env_runners or 1))

    def _log_episode_metrics(self, record: EpisodeOutcome, member: Optional[str]) -> None:
        """Buffer main's return, length and result of one episode; `flush_episode_metrics` logs them.

        Each series keeps its last `_metrics_window()` values (a bounded deque), which is what RLlib's windowed
        mean reduces to on `get_metrics()` (it clears on reduce); logging each episode's 3-5 values through
        `MetricsLogger.log_value` cost ~8.5% of a Kuhn poker iteration (its episodes are 2-3 steps)."""
        buf = self._episode_metric_buffer
        if not buf:
            win = self._metrics_window()
            buf[EPISODE_RETURN_MEAN] = deque(maxlen=win)
            buf[EPISODE_LEN_MEAN] = deque(maxlen=win)
        buf[EPISODE_RETURN_MEAN].append(record.learner_return)
        buf[EPISODE_LEN_MEAN].append(record.length)
        result = record.learner_result
        if result is not None:
            key = ("vs", str(member))
            results = buf.get(key)
            if results is None:
                results = buf[key] = deque(maxlen=self._metrics_window())
            results.append(result)

    def flush_episode_metrics(self) -> None:
        """Log the buffered episode series into `self.metrics`, one `log_value` per key: the series' mean over its
        last window (NaNs skipped, like RLlib's `MeanStats`) for the return and length, and the share of each
        result in `RESULTS` against each member (`("vs", member, result)`). `get_metrics()` calls it first, so
        the reduced metrics are those per-episode logging gave."""
        buf = self._episode_metric_buffer
        if not buf:
            return
        win = self._metrics_window()
        m = self.metrics
        for key, values in buf.items():
            if not values:
                continue
            if isinstance(key, tuple):
                n = len(values)
                for k in RESULTS:
                    m.log_value((*key, k), values.count(k) / n, window=win)
            else:
                finite = [float(v) for v in values if v == v]
                m.log_value(key, sum(finite) / len(finite) if finite else float("nan"), window=win)
        buf.clear()

    def _emit_cut(self, lanes: LaneStates, i: int, agent: str, tr: LearnerTrajectory, episodes: list) -> None:
        """At the end of `sample()`: emit the learner's complete transitions of an ongoing episode."""
        if not tr.actions:
            return
        nxt = lanes.pending[i].get(agent)
        if nxt is not None:  # the last action's next obs is known: emit everything
            chunk = tr.head(len(tr.actions))
            chunk.obs = tr.obs + [nxt]
            if tr.states:
                chunk.boot_state = lanes.state[i].get(agent)
            episodes.append(self._make_episode(lanes.controller[i][agent], agent, chunk, terminated=False, truncated=True,
                                               level=curriculum_level(lanes, i)))
            lanes.traj[i][agent] = LearnerTrajectory()
            return
        if len(tr.actions) < 2:  # only an incomplete transition (turn-based: opponent to move)
            return
        chunk = tr.head(len(tr.actions) - 1)
        chunk.obs = tr.obs
        if tr.states:
            chunk.boot_state = tr.states[-1]  # the bootstrap row is the kept step's obs: its state
        episodes.append(self._make_episode(lanes.controller[i][agent], agent, chunk, terminated=False, truncated=True,
                                           level=curriculum_level(lanes, i)))
        lanes.traj[i][agent] = tr.tail(1)
