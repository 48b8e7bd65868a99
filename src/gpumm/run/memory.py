"""Memory modes: how a measurement allocates and fills the matrices it uses.

Every caller goes through a :class:`MemoryMode`, never through cupy.asarray
directly, so that a way of allocating is one class here and every variant
runs under it unchanged.

A mode hands out *device-visible* CuPy arrays: a kernel can take them as
pointers, CuPy can fill and compare them. The modes (seed 001's three
abstractions, and one more):

- ``device``: cudaMalloc, explicit copies ("manual" in seed 001);
- ``zero_copy``: pinned host memory mapped into the device's address space
  (cudaHostAlloc with cudaHostAllocMapped; under unified addressing its host
  pointer is valid on the device): every access the kernel makes crosses the
  bus (seed 001's "UVA");
- ``managed``: cudaMallocManaged; the host writes the data, pages migrate to
  the GPU on demand at the first touch (seed 001's "unified");
- ``managed_prefetch``: managed, plus cudaMemPrefetchAsync of the inputs to
  the device before the kernel.

What each mode times is in ``ModeInfo.timed``: ``kernel`` (the kernel alone;
for zero_copy that is end to end), ``end_to_end`` (copies in, product, copy
out), ``cold`` (a run with the inputs' pages on the host, as the host's writes
leave them: page faults, or the prefetch) and ``warm`` (the runs after it:
pages resident).

Before each cold run the inputs' pages go back to the host
(:meth:`MemoryMode.make_cold`). Managed memory moves them there with
cudaMemPrefetchAsync to the CPU: the state the host's writes leave (every page
resident on the host, none mapped on the GPU) at the speed of a bulk copy. The
host rewrote the inputs before, and on an H100 host that wrote 41 GiB through
CPU page faults in one study (about 20 s on the GPU's critical path). Where
the prefetch to the CPU is refused, the host writes them again, as before.
"""

import ctypes
import functools
import sys
from dataclasses import dataclass

import numpy as np

# cudaHostAllocMapped (driver_types.h)
HOST_ALLOC_MAPPED = 2
# free device memory a managed allocation must leave untouched
MANAGED_HEADROOM_BYTES = 2 << 30
# CU_DEVICE_CPU (cuda.h; cudaCpuDeviceId in the runtime): the host as a prefetch destination
CPU_DEVICE_ID = -1


class Refused(RuntimeError):
    """An allocation that must not be made (more managed memory than the device has free)."""


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

    def write_on_host(self, array, host: np.ndarray) -> None:
        """The host writes ``host`` into ``array`` (for managed memory: the pages move back to the host)."""
        self.upload(array, host)

    def before_run(self, arrays) -> None:
        """Work done before each timed cold run, inside the timing (managed_prefetch: the prefetch)."""

    def make_cold(self, arrays, hosts) -> None:
        """Before a cold run, untimed: the host writes the inputs again (``hosts()``: their host copies)."""
        for array, host in zip(arrays, hosts()):
            self.write_on_host(array, host)


class HostMemory(MemoryMode):
    """Plain NumPy arrays, for the CPU variants."""

    info = ModeInfo("host", "NumPy arrays in host memory (CPU variants)", ("end_to_end",))

    def place(self, host):
        return to_host(host).copy()

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
        """A device copy (of a host array, or of a device array: a kernel never writes the caller's inputs)."""
        import cupy

        return cupy.array(host, copy=True)

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


def to_host(a) -> np.ndarray:
    """A NumPy array of ``a`` (itself when it is one; a copy of a CuPy array)."""
    if isinstance(a, np.ndarray):
        return a
    import cupy

    return cupy.asnumpy(a)


def _host_view(ptr: int, shape: tuple[int, ...], dtype) -> np.ndarray:
    """A NumPy array over ``ptr`` (host-accessible memory: pinned mapped or managed)."""
    dtype = np.dtype(dtype)
    n = int(np.prod(shape)) * dtype.itemsize
    buf = (ctypes.c_char * n).from_address(ptr)
    return np.frombuffer(buf, dtype=dtype).reshape(shape)


class _MappedHost:
    """A block of pinned, mapped host memory, freed when the last array over it goes."""

    def __init__(self, nbytes: int):
        import cupy

        self.ptr = cupy.cuda.runtime.hostAlloc(nbytes, HOST_ALLOC_MAPPED)

    def __del__(self):
        import cupy

        cupy.cuda.runtime.freeHost(self.ptr)


class ZeroCopyMemory(MemoryMode):
    """Pinned host memory mapped into the device's address space: the kernel reads it over the bus."""

    info = ModeInfo("zero_copy", "pinned host memory mapped into the device (cudaHostAllocMapped)", ("kernel",))

    def empty(self, shape, dtype=np.float32):
        import cupy

        nbytes = max(int(np.prod(shape)) * np.dtype(dtype).itemsize, 1)
        block = _MappedHost(nbytes)
        mem = cupy.cuda.UnownedMemory(block.ptr, nbytes, owner=block, device_id=cupy.cuda.Device().id)
        return cupy.ndarray(shape, dtype=dtype, memptr=cupy.cuda.MemoryPointer(mem, 0))

    def place(self, host):
        host = to_host(host)
        array = self.empty(host.shape, host.dtype)
        _host_view(array.data.ptr, host.shape, host.dtype)[...] = host
        return array

    def fetch(self, array):
        import cupy

        cupy.cuda.Device().synchronize()
        return _host_view(array.data.ptr, array.shape, array.dtype).copy()

    def upload(self, array, host):
        _host_view(array.data.ptr, host.shape, host.dtype)[...] = to_host(host)

    def download(self, array, host):
        host[...] = self.fetch(array)


class ManagedMemory(MemoryMode):
    """cudaMallocManaged: one pointer for host and device; pages migrate on demand."""

    info = ModeInfo("managed", "cudaMallocManaged, written on the host, migrating on demand", ("cold", "warm"))

    def empty(self, shape, dtype=np.float32):
        import cupy

        nbytes = max(int(np.prod(shape)) * np.dtype(dtype).itemsize, 1)
        check_managed(nbytes, cupy.cuda.runtime.memGetInfo()[0])
        return cupy.ndarray(shape, dtype=dtype, memptr=cupy.cuda.malloc_managed(nbytes))

    def place(self, host):
        host = to_host(host)
        array = self.empty(host.shape, host.dtype)
        self.write_on_host(array, host)
        return array

    def fetch(self, array):
        import cupy

        cupy.cuda.Device().synchronize()
        return _host_view(array.data.ptr, array.shape, array.dtype).copy()

    def write_on_host(self, array, host):
        import cupy

        cupy.cuda.Device().synchronize()  # the host may touch managed pages only while the GPU is idle
        _host_view(array.data.ptr, host.shape, host.dtype)[...] = to_host(host)

    upload = write_on_host

    def download(self, array, host):
        host[...] = self.fetch(array)

    evict_refused = ""  # why the prefetch to the CPU was refused on this machine, once it was

    def make_cold(self, arrays, hosts):
        """Every page of the inputs back on the host, none on the GPU: a prefetch to the CPU, waited for; where
        the driver refuses it, the host writes them again (and the refusal is said once)."""
        import cupy

        if not ManagedMemory.evict_refused:
            stream = cupy.cuda.get_current_stream()
            try:
                for a in arrays:
                    prefetch_to_host(a.data.ptr, a.nbytes, stream.ptr)
                stream.synchronize()
                return
            except PrefetchRefused as exc:
                ManagedMemory.evict_refused = str(exc)
                print(
                    f"managed memory: prefetch to the CPU refused ({exc}); the host writes the inputs "
                    "before each cold run instead",
                    file=sys.stderr,
                )
        super().make_cold(arrays, hosts)


class PrefetchRefused(RuntimeError):
    """The driver would not prefetch managed memory to the host."""


@functools.cache
def _driver_prefetch():
    """libcuda's cuMemPrefetchAsync, looked up and typed once per process (a cold set calls it for every run)."""
    try:
        fn = ctypes.CDLL("libcuda.so.1").cuMemPrefetchAsync
    except (OSError, AttributeError) as exc:
        raise PrefetchRefused(f"no cuMemPrefetchAsync in libcuda.so.1 ({exc})") from None
    fn.argtypes = [ctypes.c_uint64, ctypes.c_size_t, ctypes.c_int, ctypes.c_void_p]
    fn.restype = ctypes.c_int
    return fn


def prefetch_to_host(ptr: int, nbytes: int, stream: int) -> None:
    """cuMemPrefetchAsync(ptr, nbytes, CU_DEVICE_CPU, stream), the driver API's first form, which every driver
    since CUDA 8 exports: CuPy's runtime wrapper, built for CUDA 13's cudaMemLocation form, takes a device number
    only and refuses the CPU's -1 (cudaErrorInvalidDevice, on an H100 with CuPy 14.2 and CUDA 13.0)."""
    rc = _driver_prefetch()(ptr, nbytes, CPU_DEVICE_ID, stream or None)
    if rc:
        raise PrefetchRefused(f"cuMemPrefetchAsync to the CPU returned CUresult {rc}")


class ManagedPrefetchMemory(ManagedMemory):
    """Managed memory, prefetched to the device (cudaMemPrefetchAsync) before each cold run."""

    info = ModeInfo("managed_prefetch", "cudaMallocManaged plus cudaMemPrefetchAsync to the device", ("cold", "warm"))

    def before_run(self, arrays):
        import cupy

        device = cupy.cuda.Device().id
        stream = cupy.cuda.get_current_stream().ptr
        for a in arrays:
            cupy.cuda.runtime.memPrefetchAsync(a.data.ptr, a.nbytes, device, stream)


def check_managed(nbytes: int, free: int, headroom: int = MANAGED_HEADROOM_BYTES) -> None:
    """Refuse a managed allocation that would not leave ``headroom`` of the device's free memory.

    Asking for more managed memory than the card has free can hang the GPU, not only the program.
    """
    if nbytes + headroom > free:
        raise Refused(
            f"refused to allocate {nbytes / 2**30:.2f} GiB of managed memory: the device has "
            f"{free / 2**30:.2f} GiB free and {headroom / 2**30:.0f} GiB must stay free"
        )


MODES: dict[str, type[MemoryMode]] = {
    "device": DeviceMemory,
    "zero_copy": ZeroCopyMemory,
    "managed": ManagedMemory,
    "managed_prefetch": ManagedPrefetchMemory,
    "host": HostMemory,
}


def get(name: str) -> MemoryMode:
    """The memory mode called ``name``; ValueError naming the allowed ones."""
    try:
        return MODES[name]()
    except KeyError:
        raise ValueError(f"unknown memory mode {name!r}; allowed: {', '.join(MODES)}") from None
