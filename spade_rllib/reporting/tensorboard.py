"""TensorBoard extras beside Tune's scalars: the held-out map x opponent heatmap as an image.

Tune's own TBX logger writes every numeric result as a scalar (`ray/tune/eval/<opp>/score`, with
TensorBoard's ':' -> '_' in tags, e.g. `ray/tune/eval/bot_rusher/score`;
`ray/tune/heldout/<opp>/score`, `ray/tune/heldout/ladder/score`, ...). `HeatmapImages` adds, each time
a new held-out evaluation arrives, main's score per held-out map and opponent as an image
(`heldout/heatmap`, step = training iteration) to an event file of its own in the trial directory,
so `tensorboard --logdir results/<experiment>` shows it under Images.
"""
from __future__ import annotations

import io
import math
from typing import Optional

import numpy as np

from spade_rllib.reporting.figures import _plt, heldout_columns, heldout_levels

IMAGE_TAG = "heldout/heatmap"


def heatmap_png(result: dict) -> Optional[bytes]:
    """Main's held-out score per map (rows) and opponent (columns) of one result, as PNG bytes."""
    levels = heldout_levels(result)
    if not levels:
        return None
    cols = heldout_columns(levels)
    rows = sorted(levels)
    grid = np.array([[levels[r].get(c, {}).get("score", math.nan) for c in cols] for r in rows], dtype=float)
    plt = _plt()
    fig, ax = plt.subplots(figsize=(1.2 + 0.9 * len(cols), 1.0 + 0.45 * len(rows)))
    ax.imshow(np.ma.masked_invalid(grid), cmap="RdYlGn", vmin=0.0, vmax=1.0, aspect="auto")
    ax.set_xticks(range(len(cols)), cols, rotation=30, ha="right", fontsize=8)
    ax.set_yticks(range(len(rows)), rows, fontsize=8)
    for i in range(len(rows)):
        for j in range(len(cols)):
            if math.isfinite(grid[i, j]):
                ax.text(j, i, f"{grid[i, j]:.2f}", ha="center", va="center", fontsize=7)
    it = (result.get("heldout") or {}).get("iteration")
    ax.set_title("main's held-out score" + (f" (iteration {it:g})" if isinstance(it, (int, float)) else ""), fontsize=9)
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=90)
    plt.close(fig)
    return buf.getvalue()


def heatmap_callback():
    """A Tune callback writing `heatmap_png` into each trial's directory when a new held-out result arrives."""
    from ray.tune import Callback

    class HeatmapImages(Callback):
        def __init__(self):
            self.writers: dict = {}
            self.last_iteration: dict = {}

        def on_trial_result(self, iteration, trials, trial, result, **info):
            held = result.get("heldout") or {}
            it = held.get("iteration")
            if not isinstance(it, (int, float)) or math.isnan(it) or self.last_iteration.get(trial.trial_id) == it:
                return
            png = heatmap_png(result)
            if png is None:
                return
            self.last_iteration[trial.trial_id] = it
            from PIL import Image
            from tensorboardX import SummaryWriter

            writer = self.writers.get(trial.trial_id)
            if writer is None:
                writer = self.writers[trial.trial_id] = SummaryWriter(logdir=trial.path, filename_suffix=".heatmap")
            image = np.asarray(Image.open(io.BytesIO(png)).convert("RGB"))
            writer.add_image(IMAGE_TAG, image, global_step=int(result.get("training_iteration", 0)), dataformats="HWC")
            writer.flush()

        def on_trial_complete(self, iteration, trials, trial, **info):
            writer = self.writers.pop(trial.trial_id, None)
            if writer is not None:
                writer.close()

        on_trial_error = on_trial_complete

    return HeatmapImages()
