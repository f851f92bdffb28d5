"""Seeded simulators, each returning the ground truth it planted (tests, benchmarks, the tables in data/).

One module per thing simulated; import from the module (this package imports nothing):

``curves``           emergence curves with a planted onset (schedules, rise shapes, the onset definition)
``coverage_curves``  curves that break the change-point detector's model, to measure interval coverage
``run_dirs``         fake run and grid directories holding a simulated curve
``law``              emergence tables from a known UPT law (``python -m ihstats.simulate.law``)
``frontier``         formed / not-formed outcomes from a known frequency x reliability boundary
``onsets``           onset tables from a known time-to-onset law, censored at a budget
``ablation``         ablation tables (no ablation, top-k, random-k) with a planted effect
``examples``         ``python -m ihstats.simulate.examples``: data/example_frontier.csv and example_ablation.csv
"""
