"""The learned planner's exact fixed point (`envs/grid_values.py`, `_ValueIteration` with iterations 0): the same
values and gradients as value-iteration rounds run until they stop changing, on random maps and on real ones."""
import numpy as np
import pytest

torch = pytest.importorskip("torch")

from spade_rllib.envs import grid_values  # noqa: E402
from spade_rllib.envs.cell_memory import C_SELF, CHANNELS  # noqa: E402


def rounds(goal, q, count):
    """`count` rounds of V = max(G, Q * max over the 4 neighbours of V) on (N, H, W) maps, through autograd."""
    v = goal
    for _ in range(count):
        p = torch.nn.functional.pad(v, (1, 1, 1, 1))
        best = torch.maximum(torch.maximum(p[:, :-2, 1:-1], p[:, 2:, 1:-1]), torch.maximum(p[:, 1:-1, :-2], p[:, 1:-1, 2:]))
        v = torch.maximum(goal, q * best)
    return v


def random_maps(rng, n, h, w, walls=0.3):
    """Goals mostly near 0 with a few bright cells; passability high on open cells, near 0 on walls."""
    goal = torch.sigmoid(torch.from_numpy(rng.normal(-6, 4, (n, h, w)).astype(np.float32)))
    open_ = rng.uniform(size=(n, h, w)) > walls
    q = 0.9 * torch.sigmoid(torch.from_numpy(np.where(open_, rng.normal(4, 2, (n, h, w)),
                                                      rng.normal(-6, 2, (n, h, w))).astype(np.float32)))
    return goal, q


@pytest.mark.parametrize("compiled", [True, False])
@pytest.mark.parametrize("shape", [(5, 7), (9, 9), (21, 21)])
def test_solve_and_gradient_match_rounds_run_to_convergence(shape, compiled):
    rng = np.random.default_rng(sum(shape))
    h, w = shape
    n = 6 if compiled else 2
    goal, q = random_maps(rng, n, h, w)
    goal.requires_grad_(True)
    q.requires_grad_(True)
    want = rounds(goal, q, h * w - 1)  # a best path visits each cell at most once
    weights = torch.from_numpy(rng.normal(size=(n, h, w)).astype(np.float32)) * (torch.rand(n, h, w) < 0.1)
    (want * weights).sum().backward()
    v, succ, order = grid_values.solve(goal.detach().reshape(n, -1).numpy(), q.detach().reshape(n, -1).numpy(), w,
                                       compiled=compiled)
    np.testing.assert_allclose(v, want.detach().reshape(n, -1).numpy(), rtol=2e-6, atol=1e-12)
    grad_goal, grad_q = grid_values.gradient(weights.reshape(n, -1).numpy(), v, q.detach().reshape(n, -1).numpy(),
                                             succ, order, compiled=compiled)
    np.testing.assert_allclose(grad_goal, goal.grad.reshape(n, -1).numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(grad_q, q.grad.reshape(n, -1).numpy(), rtol=1e-5, atol=1e-6)
    assert np.abs(grad_q).max() > 0  # the gradient reaches passability along the paths, not only at the cells read


def test_paths_longer_than_any_bounded_round_count_are_planned():
    """A corridor winding over a 9x9 grid, 48 steps from its far end to the goal: 40 rounds see no goal there, the
    fixed point does (0.9 ** 48 of it)."""
    h = w = 9
    open_ = np.zeros((h, w), bool)
    open_[0::2, :] = True
    for r in range(1, h, 2):
        open_[r, w - 1 if r % 4 == 1 else 0] = True  # a snake: rows joined at alternate ends
    goal = torch.zeros(1, h, w)
    goal[0, 0, 0] = 1.0
    q = torch.from_numpy(np.where(open_, 0.9, 0.0).astype(np.float32))[None]
    v, _, _ = grid_values.solve(goal.reshape(1, -1).numpy(), q.reshape(1, -1).numpy(), w)
    v = v.reshape(h, w)
    far = (h - 1, w - 1)  # the snake's other end
    assert np.log(v[far]) / np.log(0.9) == pytest.approx(48, abs=1e-3)
    assert rounds(goal, q, 40)[0][far].item() == 0.0


def test_exact_planner_equals_unrolled_rounds_in_the_module():
    """`_ValueIteration(iterations=0)` (the kernel, forward and backward) against H * W - 1 unrolled rounds of the
    same weights: the same read-out and the same parameter gradients."""
    from spade_rllib.rllib.module import _ValueIteration

    torch.manual_seed(0)
    exact = _ValueIteration(len(CHANNELS), 4, iterations=0, self_channel=C_SELF)
    unrolled = _ValueIteration(len(CHANNELS), 4, iterations=11 * 11 - 1, self_channel=C_SELF)
    unrolled.load_state_dict(exact.state_dict())
    rng = np.random.default_rng(1)
    grid = (rng.uniform(size=(5, len(CHANNELS), 11, 11)) < 0.3).astype(np.float32)
    grid[:, C_SELF] = 0.0
    grid[np.arange(5), C_SELF, rng.integers(11, size=5), rng.integers(11, size=5)] = 1.0
    x = torch.from_numpy(grid)
    out_exact, out_unrolled = exact(x), unrolled(x)
    np.testing.assert_allclose(out_exact.detach().numpy(), out_unrolled.detach().numpy(), atol=1e-4)
    weights = torch.from_numpy(rng.normal(size=out_exact.shape).astype(np.float32))
    (out_exact * weights).sum().backward()
    (out_unrolled * weights).sum().backward()
    for (name, a), (_, b) in zip(exact.named_parameters(), unrolled.named_parameters()):
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-3, atol=1e-5, err_msg=name)


def test_planner_iterations_default_and_bounds():
    from spade_rllib.config.run_config import ConfigError, parse_config

    env = {"id": "CaptureTheFlag-v0", "kwargs": {"cell_memory": 21}}
    assert parse_config({"env": env, "agent": {"model": {"planner": "vin"}}}).agent.model.planner_iterations == 0
    with pytest.raises(ConfigError, match="planner_iterations"):
        parse_config({"env": env, "agent": {"model": {"planner": "vin", "planner_iterations": -1}}})


def test_padding_rows_are_not_planned_and_do_not_change_the_real_ones():
    """The zero padding of training sequences (no agent cell) is not planned (read-out 0); the real rows read the
    same with and without padding beside them."""
    from spade_rllib.rllib.module import _ValueIteration

    torch.manual_seed(2)
    vi = _ValueIteration(len(CHANNELS), 4, iterations=0, self_channel=C_SELF)
    rng = np.random.default_rng(3)
    grid = (rng.uniform(size=(3, len(CHANNELS), 9, 9)) < 0.3).astype(np.float32)
    grid[:, C_SELF] = 0.0
    grid[np.arange(3), C_SELF, [1, 4, 7], [2, 5, 8]] = 1.0
    padded = np.concatenate([grid[:1], np.zeros_like(grid[:1]), grid[1:]])
    alone, beside = vi(torch.from_numpy(grid)), vi(torch.from_numpy(padded))
    np.testing.assert_array_equal(alone.detach().numpy(), beside.detach().numpy()[[0, 2, 3]])
    assert not beside[1].any()
    beside.sum().backward()
    assert all(torch.isfinite(p.grad).all() for p in vi.parameters())


def test_the_rounds_used_off_cpu_reach_the_kernels_fixed_point():
    """`_converge` (CUDA's path: rounds until nothing changes, through autograd) against the Dijkstra kernel, values
    and gradients, run here on CPU tensors."""
    from spade_rllib.rllib.module import _FixedPoint, _ValueIteration

    vi = _ValueIteration(len(CHANNELS), 4, iterations=0, self_channel=C_SELF)
    goal, q = random_maps(np.random.default_rng(5), 4, 13, 13)
    goal, q = goal.reshape(2, 2, 13, 13), q.reshape(2, 2, 13, 13)
    a = (goal.clone().requires_grad_(True), q.clone().requires_grad_(True))
    b = (goal.clone().requires_grad_(True), q.clone().requires_grad_(True))
    rounds_v, kernel_v = vi._converge(*a), _FixedPoint.apply(*b)
    np.testing.assert_allclose(rounds_v.detach().numpy(), kernel_v.detach().numpy(), rtol=2e-6, atol=1e-12)
    weights = torch.rand(rounds_v.shape) * (torch.rand(rounds_v.shape) < 0.1)
    (rounds_v * weights).sum().backward()
    (kernel_v * weights).sum().backward()
    for x, y in zip(a, b):
        np.testing.assert_allclose(x.grad.numpy(), y.grad.numpy(), rtol=1e-5, atol=1e-6)
