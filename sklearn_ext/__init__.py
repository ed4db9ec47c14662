"""scikit-learn adapters for the glru engine (cross-validation, stepwise selection, search,
deletion). Filled by later issues; the engine itself lives in :mod:`glru`."""

__all__ = []
