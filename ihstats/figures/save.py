"""Where every figure is written, and the drawing setup every figure module shares.

:func:`save_figure` is the one place a figure is written (PNG and PDF, atomically). Importing this
module sets matplotlib's Agg backend (no display needed, the same pixels everywhere) and quiets the
font-fallback log, so each figure module of :mod:`ihstats.figures` imports it before pyplot.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
# "findfont: Font family ... not found" is logged once per missing font on machines without it:
# the fallback font draws the same figure, so it is noise on every fit's console
logging.getLogger("matplotlib.font_manager").setLevel(logging.ERROR)
import matplotlib.pyplot as plt  # noqa: E402

from ihstats.base.fileio import atomic_write  # noqa: E402

SUFFIXES = (".png", ".pdf")


def save_figure(fig: Any, path: str | Path, *, dpi: int = 150, close: bool = False) -> list[Path]:
    """Write ``fig`` as ``<path>.png`` and ``<path>.pdf`` (a suffix on ``path`` is replaced).

    Each file is written to a temporary name and renamed into place, so a reader (or a figure
    committed to git) never sees half a file. ``dpi`` applies to the PNG; ``close`` frees the
    figure afterwards (callers that draw many figures in one process).

    Returns
    -------
    list of Path
        The PNG and the PDF, in that order.
    """
    path = Path(path)
    out = []
    for suf in SUFFIXES:
        target = path.with_suffix(suf)
        # the temporary name has no image suffix: say the format explicitly
        atomic_write(target, lambda tmp, fmt=suf[1:]: fig.savefig(tmp, format=fmt, dpi=dpi,
                                                                   bbox_inches="tight"))
        out.append(target)
    if close:
        plt.close(fig)
    return out
