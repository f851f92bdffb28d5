"""The grid room: a spec of axes becomes planned runs, run by local workers or Ray, with a status.

``spec`` (TOML -> :class:`~ihtrain.grid.expand.GridSpec`), ``expand`` (spec -> planned runs, the
design checks), ``run_cost`` (FLOPs and time of a plan), ``plan`` (what to run, packs, workers),
``executors`` (local processes or Ray, one :mod:`ihtrain.run` call per task), ``status`` (the
manifest and the summary) and ``cli`` (``python -m ihtrain.grid``). The grid stands on
:mod:`ihtrain.run` and the core, never the other way (``tests/test_house_rooms.py``).
"""
