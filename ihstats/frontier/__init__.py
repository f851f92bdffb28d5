"""The frequency x reliability frontier: one fit, one module per step, imports running downward.

``spec`` (knobs, the claim level, what to fit; imports nothing of the group) <- ``data`` (runs
aggregated into cells) <- ``glm`` (the GLM cross-check) <- ``results`` (contour, band, which knob
matters more, saving) <- ``model`` (the PyMC model; ``FrontierModel.from_table(table, spec).fit()``)
<- ``report`` (``summary.md``; the figure is :func:`ihstats.figures.frontier.plot_frontier`). ``budget``
(``python -m ihstats.frontier.budget``) re-reads a grid at a shorter budget: does the boundary move.
The time-to-onset model beside it is :mod:`ihstats.onset`. This file imports nothing.
"""
