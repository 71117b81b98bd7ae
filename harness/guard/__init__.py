"""The loader guard: ``pytest --check-loaders``.

Every ``DataLoader`` and ``Dataset`` a test session constructs is checked, once per
construction site, as a ``spawn`` or ``forkserver`` worker start would receive it:

* :mod:`.watch`: sees each construction end (wrapped ``__init__`` methods) and its site;
* :mod:`.payload`: pickles what the start sends, as the start does, without moving tensors
  to shared memory;
* :mod:`.checker`: the test process's side of the one clean checker process per session
  (:mod:`harness.child.checker`, prepared as a spawned worker), started in the background;
* :mod:`.check`: one construction's :class:`~.check.Verdict`: walked here when it does not
  pickle, else loaded, run to its first batch and sent back in the checker;
* :mod:`.session`: the session's :class:`~.session.Guard`: verdicts per site and per test;
* :mod:`.summary`: the per-test failure text, the session summary, GitHub workflow commands;
* :mod:`.plugin`: the pytest hooks (xdist included), registered by :mod:`harness._pytest_plugin`.

The group is internal; its public face is the ``--check-loaders`` option.
"""

__all__ = ["EXEMPT_MARKER"]

#: ``@pytest.mark.no_check_loaders(reason=...)``: what the test constructs is neither reported
#: nor failing (a test that builds a deliberately unsafe loader, such as a test of the error).
EXEMPT_MARKER = "no_check_loaders"
