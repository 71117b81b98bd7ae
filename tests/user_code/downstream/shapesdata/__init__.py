"""A downstream project's own data package (``tests/user_code/downstream``), used by ``factory.py``."""
