"""The UPT law (updates to emergence): one fit, one module per step, imports running downward.

``spec`` (what to fit; imports nothing of the group) <- ``data`` (the table checked into arrays)
<- ``results`` (a fitted posterior: summaries, checks, predictions, saving) <- ``model`` (the PyMC
model; ``UPTLawModel.from_table(table, spec).fit()``) <- ``sensitivity`` (variants, influence,
LOO comparisons) <- ``report`` (the law's Markdown/HTML report and figures, drawn by
:mod:`ihstats.figures.law` and :mod:`ihstats.figures.posterior`). Beside them: ``scoring`` and
``validation`` (out-of-sample scores) and ``predict`` (``python -m ihstats.law.predict``, the shipped reference posterior); ``seed_block``
(each seed kind's variance at one cell by the method of moments, no sampler). This file
imports nothing, so reading one module never loads the others.
"""
