"""mypkg's own test suite: a guard that its loaders start under spawn and forkserver."""

import harness

from mypkg.data import make_loader


def test_loader_is_spawn_safe():
    harness.assert_spawn_safe(make_loader())
