"""The censored time-to-onset model beside the frontier: one fit, one module per step.

``spec`` (priors; imports nothing of the group) <- ``data`` (runs checked, censoring time) <-
``mle`` (the maximum-likelihood cross-check) <- ``results`` (elasticities, verdict, iso-onset line,
saving) <- ``model`` (the PyMC model; ``OnsetModel.from_table(table, spec).fit()``) <- ``design``
(the designs that would resolve which knob matters) and ``report`` (its section of the frontier's
``summary.md``). Beside them, ``contrast``: arms' mean log onsets with one shared sigma and the
profile interval of a difference (the mechanism factorial's contrasts, :mod:`ihstats.factorial`).
It shares the frontier's knobs and claim rule through :mod:`ihstats.knobs`, never the frontier's
modules. This file imports nothing.
"""
