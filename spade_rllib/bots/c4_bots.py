"""Scripted Connect Four players for PettingZoo ``connect_four_v3`` (fixed reference opponents).

* ``random``    - uniform over the legal columns.
* ``tactical``  - takes an immediate win if there is one, else blocks the opponent's immediate win,
  else a uniformly random legal column (it does not look further: it may set up the opponent).
* ``lookahead`` - negamax with alpha-beta to ``depth`` plies (default 4); leaves are scored by
  :func:`heuristic` (open threats and centre stones). Among equally valued columns it picks by its
  seeded RNG, so it does not play one fixed game.

Each bot: ``Bot(seed).act(env, agent) -> int`` where ``env`` is the PettingZoo env (wrapped or not)
and ``agent`` the agent to move; deterministic given ``seed``. The board is read from
``env.unwrapped.board`` (42 cells, row-major, row 0 on top; 0 empty, 1 ``player_0``, 2 ``player_1``).

Search runs on bitboards (Python ints): column ``c`` holds bits ``c*7 .. c*7+5`` bottom to top,
bit ``c*7+6`` is a sentinel that stays empty, so shifts by 1, 7, 6 and 8 walk the four directions
without wrapping (J. Pons' layout).
"""
from __future__ import annotations

import numpy as np

__all__ = ["BOTS", "RandomBot", "TacticalBot", "LookaheadBot", "Bitboard", "from_board", "winning_cells",
           "is_win", "heuristic", "negamax"]

ROWS, COLS = 6, 7
H1 = ROWS + 1  # bits per column, sentinel included
BOTTOM = sum(1 << (c * H1) for c in range(COLS))
BOARD = BOTTOM * ((1 << ROWS) - 1)  # every playable cell
COLUMN = tuple(((1 << ROWS) - 1) << (c * H1) for c in range(COLS))
CENTRE = COLUMN[COLS // 2]
ORDER = (3, 2, 4, 1, 5, 0, 6)
"""Centre-first move order: better cut-offs, and centre moves are usually stronger."""
WIN_SCORE = 1000
"""Value of a win at the root; a win k plies ahead scores WIN_SCORE - k (sooner is better)."""
THREAT_WEIGHT = 4
"""Heuristic points per empty cell that would complete four (a threat outweighs centre stones)."""
CENTRE_WEIGHT = 1
"""Heuristic points per stone in the centre column (it lies in the most windows of four)."""
DEFAULT_DEPTH = 4

Bitboard = tuple[int, int]
"""(stones of the player to move, all stones)."""


def from_board(board, piece: int) -> Bitboard:
    """PettingZoo's 42-cell board -> (stones of ``piece``, all stones) as bitboards."""
    mine = mask = 0
    for index, value in enumerate(board):
        if value:
            row, col = divmod(index, COLS)
            bit = 1 << (col * H1 + ROWS - 1 - row)
            mask |= bit
            if value == piece:
                mine |= bit
    return mine, mask


def _env_bitboard(env, agent: str) -> Bitboard:
    base = env.unwrapped
    return from_board(base.board, base.possible_agents.index(agent) + 1)


def legal_columns(mask: int) -> list[int]:
    """Columns with room left, left to right."""
    return [c for c in range(COLS) if not mask & (1 << (c * H1 + ROWS - 1))]


def is_win(stones: int) -> bool:
    """Four in a row among ``stones``."""
    for shift in (1, H1, H1 - 1, H1 + 1):
        pairs = stones & (stones >> shift)
        if pairs & (pairs >> (2 * shift)):
            return True
    return False


def winning_cells(stones: int, mask: int) -> int:
    """Empty cells (playable now or later) where one more stone of ``stones`` makes four."""
    r = (stones << 1) & (stones << 2) & (stones << 3)  # vertical: only from below
    for shift in (H1, H1 - 1, H1 + 1):
        p = (stones << shift) & (stones << 2 * shift)
        r |= p & (stones << 3 * shift)
        r |= p & (stones >> shift)
        p = (stones >> shift) & (stones >> 2 * shift)
        r |= p & (stones << shift)
        r |= p & (stones >> 3 * shift)
    return r & (BOARD ^ mask)


def _playable(mask: int) -> int:
    """The cell each non-full column would take next."""
    return (mask + BOTTOM) & BOARD


def heuristic(mine: int, mask: int) -> int:
    """Leaf score for the player to move: threats and centre stones, theirs minus the opponent's."""
    theirs = mine ^ mask
    threats = winning_cells(mine, mask).bit_count() - winning_cells(theirs, mask).bit_count()
    centre = (mine & CENTRE).bit_count() - (theirs & CENTRE).bit_count()
    return THREAT_WEIGHT * threats + CENTRE_WEIGHT * centre


def negamax(mine: int, mask: int, depth: int, alpha: int, beta: int, ply: int = 0) -> int:
    """Value for the player to move (``mine``) with ``depth`` plies of search; fail-soft alpha-beta."""
    playable = _playable(mask)
    if not playable:
        return 0  # full board: draw
    if winning_cells(mine, mask) & playable:
        return WIN_SCORE - ply - 1
    if depth <= 0:
        return heuristic(mine, mask)
    forced = winning_cells(mine ^ mask, mask) & playable
    if forced:
        if forced & (forced - 1):
            return -(WIN_SCORE - ply - 2)  # two immediate threats: one of them wins next ply
        playable = forced  # the only move that does not lose at once
    best = -WIN_SCORE - 1
    theirs = mine ^ mask
    for col in ORDER:
        move = playable & COLUMN[col]
        if not move:
            continue
        value = -negamax(theirs, mask | move, depth - 1, -beta, -alpha, ply + 1)
        if value > best:
            best = value
            if value > alpha:
                alpha = value
                if alpha >= beta:
                    break
    return best


class RandomBot:
    name = "random"

    def __init__(self, seed: int | None = None):
        self.rng = np.random.default_rng(seed)

    def _pick(self, columns) -> int:
        columns = sorted(columns)
        return int(columns[self.rng.integers(len(columns))])

    def act(self, env, agent: str) -> int:
        _, mask = _env_bitboard(env, agent)
        return self._pick(legal_columns(mask))


class TacticalBot(RandomBot):
    name = "tactical"

    def act(self, env, agent: str) -> int:
        mine, mask = _env_bitboard(env, agent)
        playable = _playable(mask)
        for stones in (mine, mine ^ mask):  # win first, then block
            cells = winning_cells(stones, mask) & playable
            if cells:
                return self._pick(c for c in range(COLS) if cells & COLUMN[c])
        return self._pick(legal_columns(mask))


class LookaheadBot(RandomBot):
    name = "lookahead"

    def __init__(self, seed: int | None = None, depth: int = DEFAULT_DEPTH):
        if not isinstance(depth, int) or depth < 1:
            raise ValueError(f"depth = {depth!r} is out of range; allowed: an integer >= 1")
        super().__init__(seed)
        self.depth = depth

    def _value(self, mine: int, mask: int, move: int, alpha: int, beta: int) -> int:
        """Value of playing ``move`` (one bit); negamax only sees positions nobody has won yet."""
        if winning_cells(mine, mask) & move:
            return WIN_SCORE - 1
        return -negamax(mine ^ mask, mask | move, self.depth - 1, -beta, -alpha, 1)

    def scores(self, mine: int, mask: int) -> dict[int, int]:
        """Exact value of every legal column (full window; for tests and inspection)."""
        inf = WIN_SCORE + 1
        return {c: self._value(mine, mask, _playable(mask) & COLUMN[c], -inf, inf) for c in legal_columns(mask)}

    def act(self, env, agent: str) -> int:
        mine, mask = _env_bitboard(env, agent)
        playable = _playable(mask)
        inf = WIN_SCORE + 1
        best, ties = -inf, []
        for col in ORDER:
            move = playable & COLUMN[col]
            if not move:
                continue
            # Window (best - 1, inf): values >= best come back exact, so ties are found; worse
            # columns fail low cheaply (integer scores).
            value = self._value(mine, mask, move, best - 1, inf)
            if value > best:
                best, ties = value, [col]
            elif value == best:
                ties.append(col)
        return self._pick(ties)


BOTS = {"random": RandomBot, "tactical": TacticalBot, "lookahead": LookaheadBot}
