"""harness.guard.watch: every Dataset and DataLoader construction seen once, at its end, and undone."""

from __future__ import annotations

import inspect
import sys
import threading

import pytest
import torch
from torch.utils.data import DataLoader, Dataset, IterableDataset, TensorDataset

from harness.guard.watch import ConstructionWatch


class Early(Dataset):
    """Defined before any watch is installed."""

    def __init__(self, n):
        self.n = n


@pytest.fixture
def seen():
    got = []
    watch = ConstructionWatch(lambda obj, site: got.append((obj, site)))
    watch.install()
    try:
        yield got, watch
    finally:
        watch.uninstall()


def _here():
    return sys._getframe(1).f_lineno


def test_each_object_is_seen_once_after_its_outermost_init(seen):
    got, _ = seen

    class Base(Dataset):
        def __init__(self, n):
            self.n = n

    class Child(Base):
        def __init__(self):
            super().__init__(3)
            self.done = True  # set after the parent's __init__: must be there when seen

    line = _here() + 1
    obj = Child()
    assert [o for o, _ in got] == [obj]
    assert got[0][1] == (__file__, line)
    assert got[0][0].done


def test_classes_defined_before_and_after_install_and_torch_own(seen):
    got, _ = seen

    class NoInit(Dataset):
        def __getitem__(self, i):
            return i

    class Stream(IterableDataset):
        def __iter__(self):
            return iter([1])

    objs = [Early(1), NoInit(), Stream(), TensorDataset(torch.zeros(2))]
    loader = DataLoader(objs[0], num_workers=0)
    assert [o for o, _ in got] == [*objs, loader]


def test_an_init_that_raises_is_not_seen_and_no_init_still_refuses_arguments(seen):
    got, _ = seen

    class Broken(Dataset):
        def __init__(self):
            raise ValueError("no")

    class NoInit(Dataset):
        pass

    with pytest.raises(ValueError):
        Broken()
    with pytest.raises(TypeError, match=r"NoInit\(\) takes no arguments"):
        NoInit(1)
    assert got == []


def test_signatures_stay_and_uninstall_restores_everything():
    before_dataset = dict(Dataset.__dict__)
    before_loader_init = DataLoader.__init__
    before_early = Early.__dict__["__init__"]
    watch = ConstructionWatch(lambda obj, site: None)
    watch.install()

    class Later(Dataset):
        def __init__(self, a, b=2):
            self.a = a

    assert str(inspect.signature(Later)) == "(a, b=2)"
    assert Early.__dict__["__init__"] is not before_early
    watch.uninstall()
    assert Later.__dict__["__init__"].__name__ == "__init__" and not hasattr(Later.__dict__["__init__"], "__harness_guard__")
    assert Early.__dict__["__init__"] is before_early
    assert DataLoader.__init__ is before_loader_init
    assert dict(Dataset.__dict__).keys() - {"__new__"} == before_dataset.keys() - {"__new__"}


def test_quiet_hides_constructions_on_its_thread_only(seen):
    got, watch = seen
    other = []
    with watch.quiet():
        Early(1)
        t = threading.Thread(target=lambda: other.append(Early(2)))
        t.start()
        t.join()
    assert [o for o, _ in got] == other


def test_an_init_given_after_the_class_was_made_is_seen(seen):
    """``@dataclass`` (and attrs, and an assignment) sets ``__init__`` after
    ``__init_subclass__`` ran; a base whose ``__init_subclass__`` skips ``super()`` hides
    its subclasses from the hook."""
    import dataclasses

    got, _ = seen

    @dataclasses.dataclass
    class Rows(Dataset):
        n: int
        scale: float = 1.0

    class Assigned(Dataset):
        pass

    def init(self, path):
        self.path = path

    Assigned.__init__ = init

    class Quiet(Dataset):
        def __init_subclass__(cls, **kwargs):  # no super() call
            pass

    class Hidden(Quiet):
        def __init__(self, x):
            self.x = x

    line = _here() + 1
    objs = [Rows(3), Assigned("a.h5"), Hidden(1)]
    assert [o for o, _ in got] == objs
    assert {site for _, site in got} == {(__file__, line)}
    assert objs[0].scale == 1.0 and objs[1].path == "a.h5"


_ARGUMENT_CASES = """
from torch.utils.data import Dataset


class NoInit(Dataset):
    pass


class PassesUp(Dataset):
    def __init__(self, x):
        super().__init__(x)


class OwnNew(Dataset):
    def __new__(cls, *args):
        return super().__new__(cls)


class OwnNewPassesUp(Dataset):
    def __new__(cls, *args):
        return super().__new__(cls, *args)

    def __init__(self, x):
        self.x = x


class WithDict(Dataset, dict):
    pass


def outcome(make):
    try:
        return type(make()).__name__
    except TypeError as exc:
        return f"TypeError: {exc}"


OUTCOMES = [outcome(make) for make in (lambda: NoInit(), lambda: NoInit(1), lambda: PassesUp(1), lambda: OwnNew(1),
                                       lambda: OwnNewPassesUp(1), lambda: WithDict(a=1), lambda: Dataset(),
                                       lambda: Dataset(1))]
"""


def test_arguments_are_refused_exactly_where_object_refuses_them():
    """The expected outcomes are CPython's own, taken in a fresh interpreter where nothing was
    ever installed; here they must be the same while a watch is installed and after."""
    import json
    import subprocess

    fresh = subprocess.run([sys.executable, "-c", _ARGUMENT_CASES + "\nimport json; print(json.dumps(OUTCOMES))"],
                           capture_output=True, text=True, check=True, timeout=120)
    expected = json.loads(fresh.stdout)
    assert "TypeError: object.__init__() takes exactly one argument (the instance to initialize)" in expected
    assert "TypeError: NoInit() takes no arguments" in expected
    watch = ConstructionWatch(lambda obj, site: None)
    watch.install()
    try:
        during = {}
        exec(compile(_ARGUMENT_CASES, "<cases>", "exec"), during)
    finally:
        watch.uninstall()
    after = {}
    exec(compile(_ARGUMENT_CASES, "<cases>", "exec"), after)
    assert during["OUTCOMES"] == expected
    assert after["OUTCOMES"] == expected
    loader = DataLoader(TensorDataset(torch.arange(4)), batch_size=2)  # arguments still reach __init__
    assert [b[0].tolist() for b in loader] == [[0, 1], [2, 3]]
