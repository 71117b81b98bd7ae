"""A module that ends the interpreter when it is imported: ``SystemExit(4)`` at import time."""

raise SystemExit(4)
