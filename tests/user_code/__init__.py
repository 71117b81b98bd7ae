"""Realistic user loaders and scripts, the inputs of ``harness diagnose`` and ``harness reproduce``.

These are what a user would point the tools at; tests state by hand, from reading this code,
which objects in them cannot be pickled and where they sit.
"""
