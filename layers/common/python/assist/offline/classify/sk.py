"""scikit-learn and SciPy for the code that fits (`assist classifier train` and `compare`, the logistic-regression
baseline): imported by the first fit, so the classifier commands that only read a model (`eval`, `promote`,
`--help`) do not load them."""

from __future__ import annotations

from functools import cache
from types import SimpleNamespace


@cache
def sk() -> SimpleNamespace:
    """The modules, by their names: `sk().linear_model.LogisticRegression`, `sk().sparse.csr_matrix`…"""
    # deferred, ADR 0104: 1.2 s (SciPy 0.36, scikit-learn 0.85), which only a command that fits pays
    from scipy import optimize, sparse
    from sklearn import cluster, linear_model, model_selection

    return SimpleNamespace(
        optimize=optimize, sparse=sparse, cluster=cluster, linear_model=linear_model, model_selection=model_selection
    )
