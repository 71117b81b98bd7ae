"""A tiny catalogue used by the tests: a hang, a worker segfault, a cell segfault, a good case."""
