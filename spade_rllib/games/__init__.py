"""What a game is, in one place: the catalog (`GameSpec` per game), env ids, and the game-loop adapter.

- `catalog`: `GameSpec` (id and aliases, turn structure, env factory, level generator, bots, held-out
  maps and opponents, renderer, action names), `register`, `game(env_id)`, `make_env`, `make_bot`, ...
- `ids`: the one env-id parser and resolver (catalog ids, PettingZoo registry ids, modules, classes and
  factories, Gymnasium ids), env kinds ("level" | "pettingzoo" | "gymnasium"), canonical ids.
- `spaces`: which action spaces are supported (the one check).
- `adapter`: `Game` / `make_game_factory`, one small turn-based API over every supported env.
- `exploitability`: exact exploitability (NashConv / 2) and exact mixture averaging on the OpenSpiel games
  (`kuhn_poker`, `leduc_poker`, `openspiel:<name>`; needs the optional `open_spiel`).

Adding a game: write its env (a `spade_rllib.envs.LevelGame` subclass for a level game) and register
one `GameSpec` in `catalog.py`. No Ray, no torch.

May import: `core/`, `envs/`, `bots/` (floor 3).
"""
from spade_rllib.games.catalog import (CONNECT_FOUR_ID, CTF_ID, MAZERACE_ID, GameSpec, bot_names,
                                       default_bot_names, find_game, game, game_ids, heldout_dir, heldout_opponents,
                                       level_game_for, level_game_ids, level_game_spec, make_bot, make_env, register,
                                       unregister)
from spade_rllib.games.env_ids import (LEVEL_KIND, EnvIdError, EnvKind, allowed_forms, canonical_env_id, env_kind,
                                   import_env_module, import_module, is_level_game, make_raw_env, parse_env_id,
                                   parse_env_path, resolve_env, spade_env_ids)

__all__ = ["CONNECT_FOUR_ID", "CTF_ID", "MAZERACE_ID", "GameSpec", "bot_names", "default_bot_names", "find_game",
           "game", "game_ids", "heldout_dir", "heldout_opponents", "level_game_for", "level_game_ids",
           "level_game_spec", "make_bot", "make_env", "register", "unregister", "LEVEL_KIND", "EnvKind",
           "canonical_env_id", "env_kind", "import_env_module", "import_module", "is_level_game", "parse_env_path",
           "spade_env_ids", "EnvIdError", "allowed_forms", "make_raw_env", "parse_env_id", "resolve_env"]
