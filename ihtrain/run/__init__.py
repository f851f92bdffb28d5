"""The run room: one training run (or a pack of runs sharing a model shape) into its run directory.

``train`` (``train_run`` and ``python -m ihtrain.train``), ``trainer`` (the loop: data, model,
probes, metrics, checkpoints), ``packed`` (several runs in one batched model), ``update`` (the
fused AdamW step both paths end in), ``schedule`` (learning rate and evaluation steps),
``divergence`` (the loss watch), ``checkpoint`` (``final.pt`` / ``last.pt``), ``files`` (the run
directory's records: status, resume checks), ``provenance`` (what the run was made with) and
``locks`` (the directory locks the run and the grid hold). It stands on the core (config, model,
probes, metrics, data); the grid and the ablations stand on it (``tests/test_house_rooms.py``).
"""
