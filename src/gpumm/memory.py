"""Memory modes: how a measurement allocates and fills the matrices it uses.

Every caller goes through a :class:`MemoryMode`, never through cupy.asarray
directly, so that a new way of allocating (zero-copy host memory, managed
memory) is one new class here and every variant runs under it unchanged.

A mode hands out *device-visible* CuPy arrays: a kernel can take them as
pointers, CuPy can fill and compare them.
"""

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class ModeInfo:
    name: str
    description: str
    timed: tuple[str, ...]  # what a measurement under this mode times


class MemoryMode:
    """Interface. Subclasses allocate; callers never ask how."""

    info: ModeInfo

    def place(self, host: np.ndarray):
        """A device-visible array holding a copy of ``host``."""
        raise NotImplementedError

    def empty(self, shape: tuple[int, ...], dtype=np.float32):
        """A device-visible array, contents undefined (callers poison it)."""
        raise NotImplementedError

    def fetch(self, array) -> np.ndarray:
        """A host copy of a device-visible array."""
        raise NotImplementedError

    def upload(self, array, host: np.ndarray) -> None:
        """Refill ``array`` from ``host`` (the host-to-device part of an end-to-end product)."""
        raise NotImplementedError

    def download(self, array, host: np.ndarray) -> None:
        """Copy ``array`` into ``host`` (the device-to-host part)."""
        raise NotImplementedError


class HostMemory(MemoryMode):
    """Plain NumPy arrays, for the CPU variants."""

    info = ModeInfo("host", "NumPy arrays in host memory (CPU variants)", ("end_to_end",))

    def place(self, host):
        return host.copy()

    def empty(self, shape, dtype=np.float32):
        return np.empty(shape, dtype=dtype)

    def fetch(self, array):
        return array


class DeviceMemory(MemoryMode):
    """cudaMalloc'd device memory, filled and read back by explicit copies."""

    info = ModeInfo(
        "device", "cudaMalloc + explicit host-to-device and device-to-host copies", ("kernel", "end_to_end")
    )

    def place(self, host):
        import cupy

        return cupy.asarray(host)

    def empty(self, shape, dtype=np.float32):
        import cupy

        return cupy.empty(shape, dtype=dtype)

    def fetch(self, array):
        import cupy

        return cupy.asnumpy(array)

    def upload(self, array, host):
        array.set(host)

    def download(self, array, host):
        array.get(out=host)


MODES: dict[str, type[MemoryMode]] = {"device": DeviceMemory, "host": HostMemory}


def get(name: str) -> MemoryMode:
    """The memory mode called ``name``; ValueError naming the allowed ones."""
    try:
        return MODES[name]()
    except KeyError:
        raise ValueError(f"unknown memory mode {name!r}; allowed: {', '.join(MODES)}") from None
