"""What the test process sends its checker: a worker start's arguments, pickled as the start pickles them.

``ForkingPickler`` with torch's reducers (``import torch.multiprocessing`` registers them),
protocol 5, inside a stand-in spawning context (:func:`harness.inspect.walker.spawning`), so
multiprocessing objects judge themselves as during a real start. One thing differs, so that
the check never changes what the test observes: torch's storage reducer would move the
user's tensors to shared memory (``storage._share_fd_cpu_()``), so every torch storage is
written instead as :func:`harness.child.checker.rebuild_storage` of a copy of its bytes (or,
above :data:`MAX_COPY_BYTES`, of its size only). Numpy and other ``PickleBuffer`` data travel
out of band (PEP 574), likewise copied up to that size and sent as a size above it: the
checker judges what loads, not the values of large arrays.
"""

from __future__ import annotations

import pickle
from dataclasses import dataclass, field
from multiprocessing.reduction import ForkingPickler
from typing import Any

from harness.child.checker import rebuild_storage
from harness.inspect import walker

__all__ = ["MAX_COPY_BYTES", "Pickled", "pickle_for_checker", "pickle_sampler"]

#: Largest storage or out-of-band buffer whose bytes are sent (bytes); larger ones are sent as
#: their size and arrive as uninitialized memory of that size.
MAX_COPY_BYTES = 8 << 20


@dataclass
class Pickled:
    """One object pickled for the checker.

    Attributes:
        data: the pickle stream.
        buffers: ``[("data", n) | ("zeros", n)]``, one per out-of-band buffer, in order.
        blobs: the bytes of each ``"data"`` buffer, in order.
    """

    data: bytes
    buffers: list[tuple[str, int]] = field(default_factory=list)
    blobs: list[bytes] = field(default_factory=list)

    @property
    def nbytes(self) -> int:
        """Bytes sent: the stream plus the copied buffers."""
        return len(self.data) + sum(len(b) for b in self.blobs)


def _storage_bytes(storage: Any) -> Any:
    """The bytes of a CPU storage, as a buffer (no copy), or ``None`` above the copy limit."""
    import torch

    n = storage.nbytes()
    if n > MAX_COPY_BYTES or n == 0:
        return None
    if storage.device.type != "cpu":
        storage = storage.cpu()
    view = torch.empty(0, dtype=torch.uint8).set_(storage, 0, (n,), (1,))
    array: Any = view.numpy()
    return pickle.PickleBuffer(array)


def _reduce_storage(storage: Any) -> tuple[Any, ...]:
    return (rebuild_storage, (_storage_bytes(storage), storage.nbytes()))


class _CheckerPickler(ForkingPickler):
    """ForkingPickler's dispatch table with torch storages copied (not shared); out-of-band
    buffers collected into ``out`` (in band when ``out`` is ``None``)."""

    def __init__(self, file: Any, out: Pickled | None) -> None:
        def keep(buf: pickle.PickleBuffer) -> None:
            assert out is not None
            with buf.raw() as view:
                if view.nbytes > MAX_COPY_BYTES:
                    out.buffers.append(("zeros", view.nbytes))
                else:
                    out.buffers.append(("data", view.nbytes))
                    out.blobs.append(bytes(view))

        pickle.Pickler.__init__(self, file, walker.PROTOCOL, buffer_callback=keep if out is not None else None)
        table, storage_types = walker.base_table()
        table = dict(table)
        for storage_type in storage_types:
            table[storage_type] = _reduce_storage
        self.dispatch_table = table


def _dump(obj: Any, out: Pickled | None) -> bytes:
    import io

    stream = io.BytesIO()
    with walker.spawning():
        pickler = _CheckerPickler(stream, out)
        try:
            pickler.dump(obj)
        finally:
            del pickler  # its memo keeps every object it pickled alive
    return stream.getvalue()


def pickle_for_checker(obj: Any) -> Pickled:
    """Pickle ``obj`` as a spawn start would, for the checker (see the module docstring).

    Raises:
        BaseException: what pickling ``obj`` raises (the user's reducers may raise anything);
            the caller then walks ``obj`` to find where.
    """
    out = Pickled(b"")
    out.data = _dump(obj, out)
    return out


def pickle_sampler(sampler: Any) -> bytes:
    """The index sampler, pickled in band for the checker to draw the first indices from, or
    ``b""`` when it does not pickle (the main process keeps it; it is never sent to a worker)."""
    try:
        return _dump(sampler, None)
    except BaseException as exc:  # noqa: BLE001 - the sampler's own reducers
        walker.reraise_if_interrupted(exc)
        return b""
