"""Shared helper of the UPT-law tests."""

import numpy as np


def model_loglik_at(model, point: dict) -> float:
    """The PyMC model's likelihood terms (observed and censored potentials, no Jacobian) at
    ``point``, given on the constrained scale by variable name."""
    ip = model.initial_point()
    for v in model.free_RVs:
        tr = model.rvs_to_transforms.get(v)
        x = np.asarray(point[v.name])
        ip[model.rvs_to_values[v].name] = tr.forward(x).eval() if tr is not None else x
    return float(model.compile_logp(vars=model.observed_RVs + model.potentials, jacobian=False)(ip))
