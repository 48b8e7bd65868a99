"""Inputs and references kept for the next variant at the same shape (host and device memory, bounded).

Every variant is checked at every shape on the same inputs (they depend only
on the seed and the shape), against the same float64 reference. Making them
is host work that grows with the shape: at 16384³ the random inputs, the
integer inputs and the references take seconds each, the same seconds for
each of a dozen variants. In a process that measures several variants (the
GPU worker, :mod:`gpumm.run.worker`), or one variant under several memory modes,
they are made once and kept here, least recently used first out, within a
byte budget for host memory and one for device memory.

Callers must treat what they get as read-only: the memory modes copy inputs
into the arrays a kernel writes (``mode.place``), and the checks only read
the references.
"""

import os
from collections import OrderedDict
from collections.abc import Callable

GIB = 1 << 30


def _arrays(value) -> list:
    if isinstance(value, (tuple, list)):
        return [a for v in value for a in _arrays(v)]
    return [value] if hasattr(value, "nbytes") else []


def _is_device(a) -> bool:
    return type(a).__module__.startswith("cupy")


def sizes(value) -> tuple[int, int]:
    """(host bytes, device bytes) of the arrays in ``value`` (an array, or nested tuples of them)."""
    host = dev = 0
    for a in _arrays(value):
        if _is_device(a):
            dev += int(a.nbytes)
        else:
            host += int(a.nbytes)
    return host, dev


def _default_host_budget() -> int:
    try:
        ram = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        ram = 16 * GIB
    return int(min(16 * GIB, ram // 4))


def _default_device_budget() -> int:
    """A quarter of the GPU's memory, at most 24 GiB: a product at 16384³ keeps 10 GiB (its exact and random
    inputs, 2 GiB each, and their float64 references, 6 GiB), 8192³ and a 16384² transpose 4.5 GiB more, all of
    them read again by the next variant; under the 12 GiB kept before (2026-11-24), the transposes measured
    between two products could push the products' references out."""
    try:
        import cupy

        total = cupy.cuda.runtime.memGetInfo()[1]
    except Exception:
        return 0
    return int(min(24 * GIB, total // 4))


class Memo:
    """A least-recently-used store of values made by ``make()``, bounded in host and device bytes."""

    def __init__(self, host_budget: int | None = None, device_budget: int | None = None):
        self._host_budget = host_budget
        self._device_budget = device_budget
        self._items: OrderedDict = OrderedDict()
        self.hits = self.misses = 0

    @property
    def host_budget(self) -> int:
        if self._host_budget is None:
            self._host_budget = int(os.environ.get("GPUMM_MEMO_HOST_BYTES", _default_host_budget()))
        return self._host_budget

    @property
    def device_budget(self) -> int:
        if self._device_budget is None:
            self._device_budget = int(os.environ.get("GPUMM_MEMO_DEVICE_BYTES", _default_device_budget()))
        return self._device_budget

    def get(self, key, make: Callable[[], object]):
        if key in self._items:
            self._items.move_to_end(key)
            self.hits += 1
            return self._items[key][0]
        self.misses += 1
        value = make()
        host, dev = sizes(value)
        if host <= self.host_budget and dev <= self.device_budget:  # a value larger than a budget is not kept
            self._items[key] = (value, host, dev)
            self._evict()
        return value

    def used(self) -> tuple[int, int]:
        return sum(h for _, h, _ in self._items.values()), sum(d for _, _, d in self._items.values())

    def _evict(self) -> None:
        host, dev = self.used()
        while self._items and (host > self.host_budget or dev > self.device_budget):
            _, (_, h, d) = self._items.popitem(last=False)
            host, dev = host - h, dev - d

    def clear(self) -> None:
        self._items.clear()

    def __len__(self) -> int:
        return len(self._items)


STORE = Memo()  # the process's store: every check goes through it
