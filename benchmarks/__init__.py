"""Benchmarks of the harness (``nox -s bench`` runs ``python -m benchmarks``).

* :mod:`benchmarks.__main__`: the catalogue's wall time against its floor (warm cells,
  ``--jobs`` = cores) and against a fresh interpreter per cell run serially.
* :mod:`benchmarks.bench_diagnose`: what ``harness diagnose`` costs on a large dataset.
"""
