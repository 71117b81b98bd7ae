"""The harness for mypkg's loaders: `nox -s harness` runs the project's catalogue
([tool.harness] in pyproject.toml) under every start method, then writes the report."""

import os

import nox

HARNESS = os.environ.get("HARNESS_REQUIREMENT", "dataloader-start-harness")
TORCH = os.environ.get("HARNESS_TORCH", "torch==2.13.0")


@nox.session
def harness(session):
    session.install(TORCH, HARNESS)
    session.install("-e", ".")
    session.run("harness", "run", *session.posargs)
    session.run("harness", "report")
