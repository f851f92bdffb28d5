"""The head-ablation tests: one fit group of the law's and the frontier's shape, imports running downward.

``spec`` (the tidy table's columns, the head-set design and its labels; imports nothing of the
group) <- ``data`` (the table checked and pivoted into per-example drops) <- ``permutation`` (the
tests: random-set and sign-flip tests with scipy's p-value rule, Holm / BH; this group's ``model``)
<- ``results`` (every test of a table, effect sizes, the design's floor) <- ``seeds`` (contrasts
between conditions with seeds as the unit, the designs' floors) and ``pooled`` (each seed's
random-set p combined, Fisher's statistic with its exact null) <- ``report`` (``summary.md``; the
figure is :func:`ihstats.figures.plots_paper.plot_ablation_drops`) and ``biinduct`` (the Bi-Induct claims
on a grid, seeds as the unit). This file imports nothing.
"""
