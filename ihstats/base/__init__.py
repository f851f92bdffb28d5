"""ihstats.base: the run contract and everything both halves read and write (issue 67).

Imports neither the statistics nor the figures; the trainer stands on it."""
