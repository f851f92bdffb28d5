"""The divergence rule: a run that goes non-finite, or whose loss stays far above its start, fails."""

from __future__ import annotations

import math
from typing import Any, Callable


class TrainingDiverged(RuntimeError):
    """Training went non-finite or diverged; ``step`` is the update where it was seen."""

    def __init__(self, step: int, reason: str):
        super().__init__(f"update {step}: {reason}")
        self.step = step


class DivergenceWatch:
    """Fails the run on a non-finite loss, gradient norm or weights, or on a loss above
    ``train.divergence_factor`` x the first update's loss at ``train.divergence_window`` logged
    steps in a row (or at the last logged step): such a run's metrics mean nothing, so it must
    not end ``done``. Checked at logged steps only, where the loss is on the host anyway (a check
    every update would synchronise the GPU every update)."""

    def __init__(self, t: Any, initial: float | None, before_fail: Callable[[], None]):
        self.factor, self.window = t.divergence_factor, t.divergence_window
        self.initial, self.before_fail, self.streak, self.last_loss = initial, before_fail, 0, math.nan

    def start(self, loss: float) -> None:
        """Take the reference loss (the first update's; kept in the checkpoint across resumes)."""
        if self.initial is None and math.isfinite(loss):
            self.initial = loss

    def fail(self, step: int, reason: str) -> None:
        self.before_fail()  # the logs up to the failure show how it went; a resume drops them
        raise TrainingDiverged(step, reason)

    def check(self, step: int, loss: float, grad_norm: float) -> None:
        if not (math.isfinite(loss) and math.isfinite(grad_norm)):
            self.fail(step, f"training went non-finite (loss {loss:g}, grad_norm {grad_norm:g}); checkpoints "
                            f"hold only finite states; lower train.lr or lengthen the warmup")
        if not self.factor or self.initial is None:
            return
        self.streak = self.streak + 1 if loss > self.factor * self.initial else 0
        self.last_loss = loss
        if self.streak >= self.window:
            self.fail(step, self._diverged(loss))

    def at_end(self, step: int) -> None:
        """A run that ends far above its start failed, however short its last stretch was."""
        if self.factor and self.streak:
            self.fail(step, self._diverged(self.last_loss))

    def _diverged(self, loss: float) -> str:
        return (f"diverged: loss {loss:.3g} above train.divergence_factor={self.factor:g} x its initial "
                f"{self.initial:.3g} at {self.streak} logged step(s) in a row; lower train.lr (or set "
                f"train.divergence_factor=0 to train on)")
