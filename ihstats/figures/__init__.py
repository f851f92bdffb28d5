"""ihstats.figures: the figures (issue 67), one module per group; each function takes tidy data or
a results object and returns the matplotlib Figure (``path``, a stem, where accepted, writes it).

- ``save``: :func:`~ihstats.figures.save.save_figure`, the one place a figure is written (PNG and
  PDF, atomically), and the setup every figure module imports first (the Agg backend);
- ``emergence``: one run's curve with its onset;
- ``posterior``: a fit's ArviZ diagnostics (trace, rank, posterior, predictive check);
- ``law``: the UPT law's observed-vs-predicted and per-run predictive figures, the mechanism
  experiment's;
- ``frontier``: the formed fraction per cell with the frontier;
- ``plots_paper``: figures that compare runs or conditions (the paper figures).

One run's training curves are drawn by :mod:`ihtrain.plots`. A figure module imports only the
base (``ihstats.base``) and, of this package, only ``save``; a statistics group reaches the figures
only through its report module (``tests/test_house_rooms.py``).
"""
