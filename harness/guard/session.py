"""The guard of one test session: every construction seen, checked once per site, and findings per test.

:class:`Guard` owns the :class:`harness.guard.watch.ConstructionWatch` and the
:class:`harness.guard.checker.Checker`. Each object constructed during a test is checked
once per construction site (file, line and class): the first object made there is
snapshotted (:func:`harness.guard.check.snapshot`), later ones reuse its verdict, so a
parametrized test checks its site once and each of its tests gets the verdict.
:meth:`Guard.take` ends a test: it resolves the test's verdicts and drops the datasets that a
loader of the same test wraps (the loader's verdict covers them).

Nothing here changes what the test observes: no start method, sharing strategy,
environment variable or module is set, and the harness modules the check needs are imported
when the guard is installed, not during a test. Whatever the check itself meets that is not
the user's code failing (a harness bug) becomes a note on the verdict, never an error in the
test.
"""

from __future__ import annotations

import threading
from typing import Any

from harness.guard.check import Verdict, resolve, snapshot, submit
from harness.guard.checker import Checker
from harness.guard.watch import ConstructionWatch, Site
from harness.inspect.walker import type_name

__all__ = ["Guard"]


class Guard:
    """The session's guard.

    Args:
        method: ``spawn`` or ``forkserver``: the start checked.
        sharing_strategy: torch's sharing strategy in the checker (a platform profile's), or
            ``None`` for torch's default.
        timeout_s: seconds one check may take in the checker.
    """

    def __init__(self, method: str = "spawn", sharing_strategy: str | None = None, timeout_s: float = 60.0) -> None:
        self.method = method
        self.sharing_strategy = sharing_strategy
        self.checker = Checker(timeout_s)
        self.watch = ConstructionWatch(self._constructed)
        self.by_site: dict[tuple[str, Site | None, str, tuple[str, ...]], Verdict] = {}
        self._current: list[tuple[Verdict, Any]] = []
        self.test = ""  # node id of the running test
        self.errors: list[str] = []  # harness-side failures, shown in the summary
        self._lock = threading.Lock()

    def install(self) -> None:
        """Import what a check needs, then watch constructions."""
        import harness.guard.summary  # noqa: F401 - imported now, not during a test
        import harness.inspect.sites  # noqa: F401
        import harness.inspect.worker_start  # noqa: F401

        self.watch.install()

    def close(self) -> None:
        """Stop watching and end the checker."""
        self.watch.uninstall()
        self.checker.close()

    def _constructed(self, obj: Any, site: Site | None) -> None:
        try:
            self._check(obj, site)
        except KeyboardInterrupt:
            raise  # the user's own code raising it is a finding inside the check: this one is real
        except BaseException as exc:  # noqa: BLE001 - the test must not see the guard fail
            self.errors.append(f"{type_name(obj)} at {site}: the guard failed: {type(exc).__name__}: {exc}")

    def _check(self, obj: Any, site: Site | None) -> None:
        from torch.utils.data import DataLoader

        kind = "loader" if isinstance(obj, DataLoader) else "dataset"
        key = (kind, site, type_name(obj), _shape(obj))
        with self._lock:
            verdict = self.by_site.get(key)
        if verdict is None:
            self.checker.warm_up()
            with self.watch.quiet():  # a dataset goes to the checker once no loader of the test wraps it
                verdict = snapshot(obj, kind, site, self.method, self.checker if kind == "loader" else None,
                                   self.sharing_strategy)
            with self._lock:
                self.by_site[key] = verdict
        self._current.append((verdict, obj))

    def take(self) -> list[Verdict]:
        """The verdicts of the objects constructed since the last call, resolved, without the
        datasets that a loader among them wraps; each once."""
        current, self._current = self._current, []
        wrapped: set[int] = set()
        for verdict, obj in current:
            if verdict.kind == "loader":
                wrapped |= _datasets_of(getattr(obj, "dataset", None))
        out: list[Verdict] = []
        needed = {id(v) for v, obj in current if not (v.kind == "dataset" and id(obj) in wrapped)}
        for verdict, obj in current:
            if id(verdict) not in needed:
                self._forget(verdict)
                continue
            if verdict.kind == "dataset" and id(obj) in wrapped:
                continue
            if verdict.start is not None:
                submit(verdict, self.checker)
                try:
                    resolve(verdict, self.checker)
                except KeyboardInterrupt:
                    raise  # a real Ctrl-C while waiting for the checker
                except BaseException as exc:  # noqa: BLE001 - a harness failure is a note, not the test's
                    verdict.note = f"not checked: the guard failed: {type(exc).__name__}: {exc}"
                    verdict.start = verdict.request = None
            if not any(v is verdict for v in out):
                out.append(verdict)
                if self.test and self.test not in verdict.tests:
                    verdict.tests.append(self.test)
        return out

    def _forget(self, verdict: Verdict) -> None:
        """A dataset verdict that a loader made needless: never sent, so not cached either (the
        same site's next dataset, unwrapped, is checked as it is then)."""
        if verdict.request is not None or verdict.start is None:
            return  # sent already, or resolved for an earlier test: it stays
        with self._lock:
            for key, cached in list(self.by_site.items()):
                if cached is verdict:
                    del self.by_site[key]
        verdict.start = None
        verdict.sent = None


def _named(value: Any) -> str:
    """A function or class by its qualified name (a lambda and a top-level function differ),
    anything else by its type."""
    try:
        if isinstance(value, type) or callable(value) and hasattr(value, "__qualname__"):
            return f"{getattr(value, '__module__', '')}.{value.__qualname__}"
        t = type(value)
        return f"{t.__module__}.{t.__qualname__}"
    except Exception:  # noqa: BLE001 - a hostile __qualname__ or __class__
        return "?"


def _shape(obj: Any, limit: int = 64) -> tuple[str, ...]:
    """What tells two objects of one construction site apart for the check: the names of the
    loader's callables and of its dataset's attribute values, one level deep (a parametrized
    test passing a lambda in one case and a function in another gets two verdicts)."""
    parts: list[str] = []
    targets = [obj]
    for name in ("dataset", "collate_fn", "worker_init_fn"):
        value = getattr(obj, "__dict__", {}).get(name) if name != "dataset" or hasattr(obj, "dataset") else None
        if value is not None:
            parts.append(f"{name}={_named(value)}")
            if name == "dataset":
                targets.append(value)
    for target in targets:
        try:
            attrs = dict(vars(target))
        except Exception:  # noqa: BLE001 - no __dict__, or a hostile one
            continue
        for key, value in list(attrs.items())[:limit]:
            if isinstance(key, str) and not key.startswith("_"):
                parts.append(f"{key}:{_named(value)}")
                inner: Any = value
                try:  # one level further: the callables a Compose-like object holds
                    if not isinstance(value, (list, tuple)):
                        inner = getattr(value, "transforms", None) or getattr(value, "__dict__", {}).get("fns")
                    if isinstance(inner, (list, tuple)):
                        parts += [f"{key}[{i}]:{_named(v)}" for i, v in enumerate(inner[:16])]
                except Exception:  # noqa: BLE001 - a hostile attribute
                    pass
    return tuple(parts)


def _datasets_of(dataset: Any, limit: int = 64) -> set[int]:
    """Ids of ``dataset`` and of the datasets it wraps (``Subset.dataset``,
    ``ConcatDataset.datasets``, and the same attributes of user wrappers), at most ``limit``."""
    seen: set[int] = set()
    stack = [dataset]
    while stack and len(seen) < limit:
        ds = stack.pop()
        if ds is None or id(ds) in seen:
            continue
        seen.add(id(ds))
        try:
            inner = vars(ds) if hasattr(ds, "__dict__") else {}
        except TypeError:
            inner = {}
        if "dataset" in inner:
            stack.append(inner["dataset"])
        if isinstance(inner.get("datasets"), (list, tuple)):
            stack.extend(inner["datasets"])
    return seen
