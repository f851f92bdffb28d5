"""The ablation room: a finished run's heads knocked out (top-k against random sets) and its ICL probes.

``head_sets`` (which heads: the top-k rule), ``head_ablation`` (knocking them out through the
model's hook point), ``icl_tasks`` (in-context prompts, key -> value recall) and ``cli``
(``python -m ihtrain.ablate``: scores a run under each head set and writes the tidy table that
:mod:`ihstats.ablation` tests). It reads runs through :mod:`ihtrain.run` and the core, and nothing
of the grid (``tests/test_house_rooms.py``).
"""
