"""Scripted Connect Four players for PettingZoo ``connect_four_v3`` (fixed reference opponents).

* ``random``    - uniform over the legal columns.
* ``tactical``  - takes an immediate win if there is one, else blocks the opponent's immediate win,
  else a uniformly random legal column (it does not look further: it may set up the opponent).
* ``lookahead`` - negamax with alpha-beta to ``depth`` plies (default 4); leaves are scored by
  :func:`heuristic` (open threats and centre stones). Among equally valued columns it picks by its
  seeded RNG, so it does not play one fixed game.
* ``mcts10``, ``mcts100``, ``mcts1000`` - :class:`MCTSBot` with 10, 100, 1000 simulations: plain UCT
  (``uct_c`` 2) with one uniformly random rollout to the end of the game per new leaf, results from
  the view of the player who moved (win 1, draw 0, loss -1, terminal positions scored exactly); it
  plays the most visited column (ties by its seeded RNG). No knowledge beyond the rules: no solver,
  no tactics, so ``mcts10`` still misses immediate wins and blocks.

``BOTS`` runs weakest to strongest, as measured over 100 games per pair with seats alternating:
``random`` < ``mcts10`` (0.68 against random, 0.17 against tactical) < ``tactical`` < ``mcts100``
(0.90 against tactical, 0.14 against lookahead) < ``lookahead`` <= ``mcts1000`` (0.57 against
lookahead, 0.94 against mcts100). Time per move on one CPU from the empty board: about 0.15 ms
(mcts10), 1.5 ms (mcts100), 20 ms (mcts1000), less later in the game. ``DEFAULT_BOTS`` (what an
evaluation plays when no bot is named) leaves out ``mcts1000``.

Each bot: ``Bot(seed).act(env, agent) -> int`` where ``env`` is the PettingZoo env (wrapped or not)
and ``agent`` the agent to move; deterministic given ``seed``. The board is read from
``env.unwrapped.board`` (42 cells, row-major, row 0 on top; 0 empty, 1 ``player_0``, 2 ``player_1``).

Search runs on bitboards (Python ints): column ``c`` holds bits ``c*7 .. c*7+5`` bottom to top,
bit ``c*7+6`` is a sentinel that stays empty, so shifts by 1, 7, 6 and 8 walk the four directions
without wrapping (J. Pons' layout).
"""
from __future__ import annotations

import math
import random

import numpy as np

__all__ = ["BOTS", "DEFAULT_BOTS", "RandomBot", "TacticalBot", "LookaheadBot", "MCTSBot", "Bitboard", "from_board",
           "winning_cells", "is_win", "heuristic", "negamax", "rollout"]

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
TOP = sum(1 << (c * H1 + ROWS - 1) for c in range(COLS))
"""The top cell of every column: ``mask & TOP`` says which columns are full."""
_OPEN = {sum(1 << (c * H1 + ROWS - 1) for c in range(COLS) if full >> c & 1):
         tuple((COLUMN[c], 1 << (c * H1)) for c in range(COLS) if not full >> c & 1) for full in range(1 << COLS)}
"""``mask & TOP`` -> ((column bits, bottom bit), ...) of the columns with room left, left to right."""

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


def rollout(mine: int, mask: int, rand) -> int:
    """Uniformly random moves to the end of the game from (``mine``, ``mask``), nobody having won yet;
    ``rand()`` draws a float in [0, 1). Returns 1 if the player to move wins, -1 if it loses, 0 for a draw."""
    theirs = mine ^ mask
    sign = 1  # +1 while the side to move is the one to move at the start
    open_columns = _OPEN
    while True:
        columns = open_columns[mask & TOP]
        if not columns:
            return 0
        column, bottom = columns[int(rand() * len(columns))]
        move = (mask & column) + bottom  # the column's lowest empty cell
        mine |= move
        mask |= move
        s = mine & (mine >> 1)  # vertical
        if s & (s >> 2):
            return sign
        s = mine & (mine >> H1)  # horizontal
        if s & (s >> 2 * H1):
            return sign
        s = mine & (mine >> (H1 - 1))  # diagonal: next column, one row down
        if s & (s >> 2 * (H1 - 1)):
            return sign
        s = mine & (mine >> (H1 + 1))  # diagonal: next column, one row up
        if s & (s >> 2 * (H1 + 1)):
            return sign
        mine, theirs, sign = theirs, mine, -sign


class _Node:
    """A position in the search tree. ``total`` sums the results (1 win, 0 draw, -1 loss) of the player
    who made the move into this node; ``terminal`` is that result when the move ended the game, else None."""

    __slots__ = ("mine", "mask", "column", "visits", "total", "terminal", "children", "untried")

    def __init__(self, mine: int, mask: int, column: int, terminal):
        self.mine, self.mask, self.column, self.terminal = mine, mask, column, terminal
        self.visits = 0
        self.total = 0.0
        self.children = []
        self.untried = None  # [(column, move bit), ...] in the order they are tried; None until expanded


class MCTSBot:
    """UCT Monte-Carlo tree search with one uniformly random rollout per leaf (see the module docstring)."""

    name = "mcts"

    def __init__(self, seed: int | None = None, simulations: int = 100, uct_c: float = 2.0):
        if not isinstance(simulations, int) or simulations < 1:
            raise ValueError(f"simulations = {simulations!r} is out of range; allowed: an integer >= 1")
        if not isinstance(uct_c, (int, float)) or not math.isfinite(uct_c) or uct_c < 0:
            raise ValueError(f"uct_c = {uct_c!r} is out of range; allowed: a finite number >= 0")
        self.random = random.Random(None if seed is None else int(seed))
        self.simulations = simulations
        self.uct_c = float(uct_c)

    def _expand(self, node: _Node) -> None:
        mask = node.mask
        playable = _playable(mask)
        untried = [(c, playable & COLUMN[c]) for c in range(COLS) if playable & COLUMN[c]]
        self.random.shuffle(untried)
        node.untried = untried

    def search(self, mine: int, mask: int) -> _Node:
        """The root after ``simulations`` simulations from (``mine``, ``mask``); the game must not be over."""
        root = _Node(mine, mask, -1, None)
        rand = self.random.random
        c, log, sqrt = self.uct_c, math.log, math.sqrt
        path = []
        for _ in range(self.simulations):
            node = root
            path.clear()
            path.append(node)
            while node.terminal is None and node.untried is not None:
                if node.untried:  # every child once, in the shuffled order, before any UCT choice
                    column, move = node.untried.pop()
                    theirs = node.mine ^ node.mask
                    stones = node.mine | move
                    child_mask = node.mask | move
                    terminal = 1.0 if is_win(stones) else (0.0 if child_mask == BOARD else None)
                    child = _Node(theirs, child_mask, column, terminal)
                    node.children.append(child)
                else:
                    scale = c * sqrt(log(node.visits))
                    best = -math.inf
                    for candidate in node.children:
                        n = candidate.visits
                        value = candidate.total / n + scale / sqrt(n)
                        if value > best:
                            best, child = value, candidate
                node = child
                path.append(node)
            if node.terminal is not None:
                value = node.terminal
            else:
                self._expand(node)
                value = -float(rollout(node.mine, node.mask, rand))  # for the player who moved into node
            for visited in reversed(path):
                visited.visits += 1
                visited.total += value
                value = -value
        return root

    def act(self, env, agent: str) -> int:
        mine, mask = _env_bitboard(env, agent)
        root = self.search(mine, mask)
        visits = {column: 0 for column, _ in root.untried or ()}  # columns never tried (one simulation)
        visits.update((child.column, child.visits) for child in root.children)
        most = max(visits.values())
        ties = sorted(column for column, n in visits.items() if n == most)
        return ties[self.random.randrange(len(ties))] if len(ties) > 1 else ties[0]


class MCTS10(MCTSBot):
    name = "mcts10"

    def __init__(self, seed: int | None = None):
        super().__init__(seed, simulations=10)


class MCTS100(MCTSBot):
    name = "mcts100"

    def __init__(self, seed: int | None = None):
        super().__init__(seed, simulations=100)


class MCTS1000(MCTSBot):
    name = "mcts1000"

    def __init__(self, seed: int | None = None):
        super().__init__(seed, simulations=1000)


BOTS = {"random": RandomBot, "mcts10": MCTS10, "tactical": TacticalBot, "mcts100": MCTS100,
        "lookahead": LookaheadBot, "mcts1000": MCTS1000}
"""Name -> class, weakest to strongest (see the module docstring)."""
DEFAULT_BOTS = ("random", "mcts10", "tactical", "mcts100", "lookahead")
"""The bots an evaluation plays when none are named: every bot but the slow ``mcts1000``."""
