"""A trained player from a checkpoint, Ray-free (floor 5): one module, or the league as one player.

* `policy`: `load_policy(checkpoint, module_id)` -> `Policy` (`act`, `step`, batches), the one loader every
  tool uses (`evaluate`, `play`, `export`, the evaluation players).
* `league_player`: the league as a player (`league:uniform`, `league:plan`, `league:nash`), a `MixturePolicy`
  over the members `league/mixture.py` weights.
* `league_average`: `league:average`, the league distilled into one network of main's architecture (cached beside
  the run).
* `league_export`: the files of the league exported as one player (`export --module league:<mode>`).
* `exploitability_report`: exact exploitability of main, each member and each league mixture on OpenSpiel games.

May import: `core/`, `games/`, `league/`, `artifacts/`, `config/` (floors 0-5) and torch; of Ray only the RLModule classes, imported
when a module is rebuilt (no Ray runtime); never `rllib/`.
Import the submodules directly; this package import runs nothing.
"""
