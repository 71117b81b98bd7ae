"""The pickle-path walker on real objects: every failing path, nothing else, and byte counts.

Expected paths come from how CPython pickles these objects (``Lib/pickle.py``; ``__dict__``
state, ``functools.partial.__reduce__``, ``method.__reduce__`` returning ``getattr(obj, name)``,
``zipfile.ZipFile`` holding ``fp`` and ``_lock``, ``logging.Handler`` holding ``lock`` and, for
a ``StreamHandler``, ``stream``), stated by hand for each fixture below.
"""

from __future__ import annotations

import functools
import inspect
import io
import logging
import multiprocessing
import pickle
import sqlite3
import sys
import threading
import tracemalloc
import zipfile

import numpy as np
import pytest

from harness.inspect.walker import PROTOCOL, find_problems, measure_payload, probe


def paths(problems) -> list[str]:
    return [p.path for p in problems]


# --- module-level helpers: these pickle by reference ------------------------------------------

def double(x):
    return 2 * x


class Holder:
    def __init__(self, **attrs):
        self.__dict__.update(attrs)

    def method(self, x):
        return x


class Slotted:
    __slots__ = ("name", "fn")

    def __init__(self, name, fn):
        self.name = name
        self.fn = fn


class DropsConnection:
    """Drops its unpicklable member in ``__getstate__``: the fix pattern, must not be flagged."""

    def __init__(self):
        self.path = ":memory:"
        self.conn = sqlite3.connect(self.path)

    def __getstate__(self):
        return {"path": self.path, "conn": None}


class RenamesState:
    """``__getstate__`` hands a privately stored lambda over under another key."""

    def __init__(self):
        self._hook = lambda x: x

    def __getstate__(self):
        return {"hook": self._hook}


class ReducesToLambda:
    """A custom ``__reduce__`` whose argument is a lambda (stored nowhere on the object)."""

    def __reduce__(self):
        return (Holder, (lambda: 0,))


def make_local_function(with_closure: bool):
    offset = 1
    if with_closure:
        def shift(x):
            return x + offset
        return shift

    def shift_plain(x):
        return x + 1
    return shift_plain


def make_local_instance():
    class Local:
        def __init__(self):
            self.n = 3
    return Local()


# --- tests ------------------------------------------------------------------------------------

def test_nested_lists_and_dicts_give_subscript_paths():
    cfg = {"train": [double, {"ops": [abs, lambda x: x]}], "eval": (double, lambda y: y), "n": 3}
    problems = find_problems({"cfg": cfg})
    assert paths(problems) == ["cfg['train'][1]['ops'][1]", "cfg['eval'][1]"]
    assert {p.label for p in problems} == {"lambda"}
    assert all(p.type == "function" for p in problems)
    assert all("<lambda>" in p.message for p in problems)


def test_attribute_paths_and_only_the_deepest_object():
    ds = Holder(transform=Holder(transforms=[double, abs, lambda x: x]), db=Holder(conn=sqlite3.connect(":memory:")))
    problems = find_problems({"dataset": ds})
    # Neither ``dataset`` nor ``dataset.transform`` nor ``dataset.db`` is reported: they fail
    # only through their children.
    assert paths(problems) == ["dataset.transform.transforms[2]", "dataset.db.conn"]
    conn = problems[1]
    assert conn.type == "sqlite3.Connection"
    assert conn.label == "sqlite"
    assert conn.message == "cannot pickle 'sqlite3.Connection' object"
    assert conn.exc_type == "TypeError"


def test_partial_func_args_and_keywords():
    local = make_local_function(with_closure=False)
    fn = functools.partial(local, 1, lambda: 2, key=lambda t: t, size=4)
    problems = find_problems({"collate_fn": fn})
    assert paths(problems) == ["collate_fn.func", "collate_fn.args[1]", "collate_fn.keywords['key']"]
    assert [p.label for p in problems] == ["local-function", "lambda", "lambda"]
    assert {p.within for p in problems} == {"partial"}


def test_closure_and_local_function_are_reported_by_name_at_their_own_path():
    closure = make_local_function(with_closure=True)
    plain = make_local_function(with_closure=False)
    problems = find_problems({"dataset": Holder(transform=closure), "worker_init_fn": plain})
    assert paths(problems) == ["dataset.transform", "worker_init_fn"]
    assert [p.label for p in problems] == ["closure", "local-function"]
    assert problems[0].qualname == "make_local_function.<locals>.shift"
    assert "local object 'make_local_function.<locals>.shift'" in problems[0].message


def test_local_class_is_reported_at_the_class_not_the_instance():
    problems = find_problems({"dataset": make_local_instance()})
    assert paths(problems) == ["dataset.__class__"]
    assert problems[0].label == "local-class"
    assert problems[0].type == "type"


def test_bound_methods():
    good = Holder(size=3)
    bad = Holder(key=lambda t: t)
    assert find_problems({"collate_fn": good.method}) == []
    problems = find_problems({"collate_fn": bad.method})
    assert paths(problems) == ["collate_fn.__self__.key"]


def test_bound_method_of_the_dataset_stored_on_the_dataset_is_not_a_separate_problem():
    ds = Holder(fn=lambda x: x)
    ds.hook = ds.method  # a cycle back to the dataset, which fails only because of ds.fn
    assert paths(find_problems({"dataset": ds})) == ["dataset.fn"]


def test_resources_open_file_module_generator_lock(tmp_path):
    f = tmp_path / "index.txt"
    f.write_text("0\n")
    with open(f) as fh:
        ds = Holder(index=fh, mod=sys, files=(p for p in tmp_path.iterdir()), lock=threading.Lock(), rlock=threading.RLock())
        problems = find_problems({"dataset": ds})
    got = {p.path: (p.type, p.label) for p in problems}
    assert got == {
        "dataset.index": ("_io.TextIOWrapper", "open-file"),
        "dataset.mod": ("module", "module"),
        "dataset.files": ("generator", "generator"),
        "dataset.lock": ("_thread.lock", "lock"),
        "dataset.rlock": ("_thread.RLock", "lock"),
    }


def test_zipfile_reports_its_file_and_lock_within_zipfile(tmp_path):
    path = tmp_path / "a.zip"
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("x", b"1")
    with zipfile.ZipFile(path) as zf:
        problems = find_problems({"dataset": Holder(archive=zf, names=["x"])})
    assert sorted(paths(problems)) == ["dataset.archive._lock", "dataset.archive.fp"]
    assert {p.within for p in problems} == {"zipfile"}


def test_logger_is_not_flagged_but_a_stored_handler_is():
    logger = logging.getLogger("tests.walker")
    handler = logging.StreamHandler(io.StringIO())
    logger.addHandler(handler)
    try:
        assert find_problems({"dataset": Holder(log=logger)}) == []
        problems = find_problems({"dataset": Holder(handler=handler)})
    finally:
        logger.removeHandler(handler)
    # StringIO pickles; the handler's RLock does not.
    assert paths(problems) == ["dataset.handler.lock"]
    assert problems[0].within == "log-handler"


def test_custom_getstate_and_reduce_are_followed():
    assert find_problems({"dataset": DropsConnection()}) == []
    assert paths(find_problems({"dataset": RenamesState()})) == ["dataset._hook"]
    assert paths(find_problems({"dataset": ReducesToLambda()})) == [f"dataset.__reduce_ex__({PROTOCOL})[1][0]"]


def test_slots_sets_and_unpicklable_dict_keys():
    lam = lambda: 0  # noqa: E731 - the object under test
    problems = find_problems({"spec": Slotted("double", lambda x: 2 * x), "s": {lam}, "d": {lam: 1, "ok": 2}})
    assert paths(problems) == ["spec.fn", "list(s)[0]"]  # the key is the same object: reported once
    problems = find_problems({"d": {lambda: 1: "v"}})
    assert paths(problems) == ["list(d.keys())[0]"]


def test_an_object_reached_twice_is_reported_once():
    shared = lambda x: x  # noqa: E731
    problems = find_problems({"dataset": Holder(a=shared, b=[shared]), "collate_fn": Holder(c=shared).method})
    assert paths(problems) == ["dataset.a"]


def test_large_list_with_one_bad_item():
    items = [Holder(i=i) for i in range(5000)]
    items[3210].fn = lambda x: x
    assert paths(find_problems({"dataset": Holder(items=items)})) == ["dataset.items[3210].fn"]


def test_too_deep_nesting_is_reported_where_it_starts():
    nested: list = []
    for _ in range(200_000):  # deeper than the C pickler allows on 3.10-3.13
        nested = [nested]
    problems = find_problems({"dataset": Holder(tree=nested)})
    assert paths(problems) == ["dataset.tree"]
    assert problems[0].label == "too-deep"


def test_picklable_things_are_not_flagged():
    ds = Holder(arr=np.arange(10), log=logging.getLogger("x"), fn=double, cls=Holder, m=Holder().method,
                builtin=len, bm=[].append, partial=functools.partial(double, 2))
    assert find_problems({"dataset": ds}) == []


def test_spawn_context_queue_pickles_as_during_a_real_start():
    q = multiprocessing.get_context("spawn").Queue()
    try:
        # Outside a start, multiprocessing refuses: "Queue objects should only be shared between
        # processes through inheritance". During a start it pickles, so it is no problem.
        with pytest.raises(RuntimeError):
            pickle.dumps(q)
        assert find_problems({"dataset": Holder(q=q)}) == []
    finally:
        q.close()
        q.join_thread()


@pytest.mark.skipif(sys.platform == "win32" or "_is_fork_ctx" not in inspect.getsource(
    __import__("multiprocessing.synchronize").synchronize), reason="fork-context SemLock check: CPython 3.11.5+, POSIX")
def test_fork_context_lock_in_a_spawn_start():
    lock = multiprocessing.get_context("fork").Lock()
    problems = find_problems({"dataset": Holder(lock=lock)})
    assert paths(problems) == ["dataset.lock"]
    assert problems[0].label == "fork-context-semlock"
    assert "SemLock created in a fork context" in problems[0].message


def test_payload_counts_numpy_without_copying():
    arr = np.ones(32 << 20, dtype=np.uint8)  # 32 MiB
    tracemalloc.start()
    try:
        payload = measure_payload({"arr": arr})
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert payload.buffer_bytes == arr.nbytes
    assert 0 < payload.stream_bytes < 1024
    # numpy reports its allocations to tracemalloc; a copy would show 32 MiB here.
    assert peak < 1 << 20


def test_payload_stream_bytes_match_a_real_dump():
    obj = {"rows": [list(range(100)) for _ in range(50)], "name": "x" * 1000}
    payload = measure_payload(obj)
    real = io.BytesIO()
    from multiprocessing.reduction import ForkingPickler

    ForkingPickler(real, PROTOCOL).dump(obj)
    assert payload.stream_bytes == len(real.getvalue())
    assert payload.buffer_bytes == 0


def test_torch_tensors_counted_and_not_moved_to_shared_memory():
    torch = pytest.importorskip("torch")
    t = torch.zeros(1000, dtype=torch.float64)
    payload = measure_payload({"t": t})
    assert payload.storage_bytes == 8000
    assert not t.is_shared()
    assert find_problems({"dataset": Holder(t=t, p=torch.nn.Parameter(torch.ones(2)))}) == []


def test_non_leaf_tensor_requiring_grad_is_flagged():
    torch = pytest.importorskip("torch")
    leaf = torch.ones(3, requires_grad=True)
    problems = find_problems({"dataset": Holder(w=leaf * 2, ok=leaf)})
    assert paths(problems) == ["dataset.w"]
    assert problems[0].label == "non-leaf-tensor"


def test_probe_returns_the_pickler_exception():
    assert probe([1, 2]) is None
    exc = probe(sys)
    assert isinstance(exc, TypeError)
    assert str(exc) == "cannot pickle 'module' object"


def _notes_path(root: str, notes: list[str]) -> str:
    """Turn Python 3.14's pickle ``__notes__`` (innermost first) into a path expression."""
    import re

    path = root
    previous = ""
    for note in reversed(notes):
        m = re.match(r"when serializing (?:dict|list|tuple) item (.+)$", note)
        if m:
            item = m.group(1)
            if previous.endswith(" state") and re.fullmatch(r"'\w+'", item):
                path += "." + item.strip("'")
            else:
                path += f"[{item}]"
        previous = note
    return path


@pytest.mark.skipif(sys.version_info < (3, 14), reason="pickle errors carry __notes__ from Python 3.14 (gh-122213)")
def test_python_314_notes_agree_with_the_first_walker_path():
    from multiprocessing.reduction import ForkingPickler

    ds = Holder(transform=Holder(transforms=[double, abs, lambda x: x]), ops={"flip": lambda x: x})
    with pytest.raises(Exception) as info:
        ForkingPickler(io.BytesIO(), PROTOCOL).dump(ds)
    notes = getattr(info.value, "__notes__", [])
    assert notes, "Python 3.14 pickle errors carry notes"
    assert _notes_path("dataset", notes) == paths(find_problems({"dataset": ds}))[0]


class ReducesToNewTensor:
    """``__reduce__`` builds a tensor on the fly: nothing keeps it alive after pickling."""

    def __reduce__(self):
        import torch

        return (Holder, (torch.ones(3),))


@pytest.mark.skipif(sys.platform != "linux", reason="torch's file_descriptor sharing strategy is the Linux default")
def test_tensors_made_while_pickling_are_flagged_under_file_descriptor_sharing():
    # Observed: under spawn and forkserver with the file_descriptor strategy, the worker dies
    # with "unable to resize file <filename not specified> to the right size" for both.
    torch = pytest.importorskip("torch")
    import torch.multiprocessing as tmp

    gen = torch.Generator().manual_seed(3)
    ds = Holder(rng=gen, temp=ReducesToNewTensor(), kept=torch.ones(3))
    before = tmp.get_sharing_strategy()
    try:
        tmp.set_sharing_strategy("file_descriptor")
        problems = find_problems({"dataset": ds})
        assert [(p.path, p.label) for p in problems] == [("dataset.rng", "torch-generator"),
                                                        ("dataset.temp", "temporary-tensor")]
        assert "unable to resize file" in problems[0].message
        tmp.set_sharing_strategy("file_system")  # named shared-memory files outlive the tensor
        assert find_problems({"dataset": ds}) == []
    finally:
        tmp.set_sharing_strategy(before)
