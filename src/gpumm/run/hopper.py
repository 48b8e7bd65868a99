"""Launching the BF16 race's kernels (op matmul_bf16): the geometry each cubin describes, TMA tensor maps, and
dynamic shared memory beyond 48 KB.

Each kernel file of ``kernels/matmul_bf16/`` puts a ``bf16_geom`` constant in its cubin, a ``struct Bf16Geom``
(``kernels/matmul_bf16/geometry.cuh``: its rung, tile, stages, threads, dynamic shared memory, cluster size,
whether it is persistent, how C is stored, the TMA boxes), set member by member by name. Its members' names are
read here from that declaration and their values from the cubin's ELF symbol table, no driver call, so a CPU
test can read it too. The tensor maps are made
on the host by the driver's ``cuTensorMapEncodeTiled`` (ctypes on libcuda) and reach the kernel by value as
``const __grid_constant__ CUtensorMap`` parameters: CuPy passes a one-element NumPy array by value (the driver
copies the parameter's 128 bytes from it), so a one-element array of a 128-byte type is the map. A launch is
then an ordinary CuPy launch, which a CUDA graph can capture.
"""

import ctypes
import functools
import re
import struct
from pathlib import Path

import numpy as np

from gpumm.setup import digest, paths

GEOMETRY_HEADER = paths.KERNELS / "matmul_bf16" / "geometry.cuh"
MAP = np.dtype([("words", np.uint64, (16,))])  # a CUtensorMap: 128 opaque bytes
BFLOAT16, FLOAT32 = 9, 7  # CUtensorMapDataType
MAX_DYNAMIC_SHARED = 8  # CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES


class HopperError(RuntimeError):
    """A cubin without its geometry, or a driver call that failed (its name and error)."""


@functools.cache
def fields(header: Path = GEOMETRY_HEADER) -> tuple[str, ...]:
    """The members of ``struct Bf16Geom`` in ``header``, in order (each an ``int``)."""
    text = " ".join(digest.tokens(header.read_text()))
    body = re.search(r"\bstruct Bf16Geom \{(.*?)\} ;", text)
    if body is None:
        raise HopperError(f"{header}: no struct Bf16Geom {{...}}; declaration")
    names = []
    for decl in body.group(1).split(";"):
        words = decl.replace(",", " ").split()
        if not words:
            continue
        if words[0] != "int" or not all(re.fullmatch(r"[a-z_]\w*", w) for w in words[1:]):
            raise HopperError(f"{header}: struct Bf16Geom: {decl.strip()!r} is not a list of int members")
        names += words[1:]
    return tuple(names)


def geometry(cubin: Path, names: tuple[str, ...] | None = None) -> dict[str, int]:
    """The ``bf16_geom`` constant of a cubin, by member name (:func:`fields`, or ``names`` in their order for a
    cubin of another declaration, which may hold fewer); a member the kernel does not set is 0."""
    strict, names = names is None, names or fields()
    raw = _symbols(cubin).get("bf16_geom")
    if raw is None:
        raise HopperError(f"{cubin}: no bf16_geom constant (a kernel of kernels/matmul_bf16/ defines one)")
    values = struct.unpack(f"<{len(raw) // 4}i", raw)
    if strict and len(values) != len(names):
        raise HopperError(f"{cubin}: bf16_geom holds {len(values)} ints, the declaration {len(names)}")
    return {**dict.fromkeys(names, 0), **dict(zip(names, values))}


def pdl(cubin: Path) -> bool:
    """Whether a cubin's kernel is launched with programmatic dependent launch: it holds a ``bf16_pdl`` constant
    of 1 (kernels/matmul_bf16/pdl.cuh, a build with PDL = 1)."""
    raw = _symbols(cubin).get("bf16_pdl")
    return raw is not None and struct.unpack("<i", raw[:4])[0] == 1


def _symbols(cubin: Path) -> dict[str, bytes]:
    """The bytes of each sized data symbol in a cubin's ELF symbol table (its ``__constant__`` values)."""
    d = Path(cubin).read_bytes()
    shoff = struct.unpack_from("<Q", d, 0x28)[0]
    shentsize, shnum = struct.unpack_from("<HH", d, 0x3A)
    secs = [struct.unpack_from("<IIQQQQIIQQ", d, shoff + i * shentsize) for i in range(shnum)]

    def name_at(off: int) -> str:
        return d[off : d.index(b"\0", off)].decode()

    out = {}
    for sec in secs:
        if sec[1] != 2:  # SHT_SYMTAB
            continue
        strtab = secs[sec[6]][4]
        for i in range(sec[5] // 24):
            name, info, _, shndx, value, size = struct.unpack_from("<IBBHQQ", d, sec[4] + i * 24)
            if info & 0xF == 1 and size and 0 < shndx < len(secs) and secs[shndx][1] != 8:  # an object, not NOBITS
                out[name_at(strtab + name)] = d[secs[shndx][4] + value : secs[shndx][4] + value + size]
    return out


_cuda = None


def _driver():
    global _cuda
    if _cuda is None:
        lib = ctypes.CDLL("libcuda.so.1")
        u32p, u64p = ctypes.POINTER(ctypes.c_uint32), ctypes.POINTER(ctypes.c_uint64)
        lib.cuTensorMapEncodeTiled.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_uint32, ctypes.c_void_p]
        lib.cuTensorMapEncodeTiled.argtypes += [u64p, u64p, u32p, u32p] + [ctypes.c_int] * 4
        lib.cuFuncSetAttribute.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_int]
        lib.cuLaunchKernelEx.argtypes = [ctypes.POINTER(_Config), ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p]
        _cuda = lib
    return _cuda


def _check(res: int, what: str) -> None:
    if res != 0:
        name = ctypes.c_char_p()
        _driver().cuGetErrorName(res, ctypes.byref(name))
        raise HopperError(f"{what} failed: {res} ({(name.value or b'?').decode()})")


# a kernel's l2_fetch (bytes; 0: unset) -> CUtensorMapL2promotion: 64 B (1), 128 B (2), 256 B (3)
PROMOTION = {0: 3, 64: 1, 128: 2, 256: 3}


def promotion(geom: dict[str, int]) -> int:
    """The L2 promotion of a kernel's tensor maps, from its geometry's ``l2_fetch`` (256 bytes where unset)."""
    fetch = geom.get("l2_fetch", 0)
    if fetch not in PROMOTION:
        raise HopperError(f"l2_fetch = {fetch}: the TMA's L2 promotion is 64, 128 or 256 bytes (0: 256)")
    return PROMOTION[fetch]


def tensor_map(
    ptr: int, dtype: int, elem: int, rows: int, cols: int, box_rows: int, box_cols: int, promote: int = 3
) -> np.ndarray:
    """A 2-D tiled tensor map over a row-major rows x cols array at device address ``ptr``: a box of box_rows x
    box_cols, 128-byte swizzle, zeros read outside the array (and writes clipped there), the L2 fetching
    ``promote`` (a CUtensorMapL2promotion: 3, 256 bytes) for a miss; as a one-element array."""
    raw = (ctypes.c_uint8 * 256)()
    at = (ctypes.addressof(raw) + 127) & ~127  # the driver wants the map aligned
    dims = (ctypes.c_uint64 * 2)(cols, rows)
    strides = (ctypes.c_uint64 * 1)(cols * elem)
    box = (ctypes.c_uint32 * 2)(box_cols, box_rows)
    steps = (ctypes.c_uint32 * 2)(1, 1)
    # no interleave (0), 128-byte swizzle (3), the L2 promotion, zero fill out of bounds (0)
    res = _driver().cuTensorMapEncodeTiled(at, dtype, 2, ptr, dims, strides, box, steps, 0, 3, promote, 0)
    _check(res, f"cuTensorMapEncodeTiled({rows} x {cols}, box {box_rows} x {box_cols})")
    m = np.zeros(1, dtype=MAP)
    ctypes.memmove(m.ctypes.data, at, 128)
    return m


def prepare(fn, geom: dict[str, int]) -> None:
    """Let ``fn`` (a CuPy RawKernel) have the dynamic shared memory its geometry asks for (over 48 KB needs it)."""
    if geom["smem"] > 0:
        handle = getattr(fn, "kernel", fn).ptr
        _check(_driver().cuFuncSetAttribute(handle, MAX_DYNAMIC_SHARED, geom["smem"]), "cuFuncSetAttribute")


PROGRAMMATIC_STREAM_SERIALIZATION = 6  # CUlaunchAttributeID


class _Attribute(ctypes.Structure):  # CUlaunchAttribute: its id, padding to 8 bytes, a 64-byte value
    _fields_ = [
        ("id", ctypes.c_uint),
        ("pad", ctypes.c_char * 4),
        ("value", ctypes.c_int),
        ("rest", ctypes.c_char * 60),
    ]


class _Config(ctypes.Structure):  # CUlaunchConfig
    _fields_ = [("grid", ctypes.c_uint * 3), ("block", ctypes.c_uint * 3), ("smem", ctypes.c_uint)]
    _fields_ += [("stream", ctypes.c_void_p), ("attrs", ctypes.POINTER(_Attribute)), ("n_attrs", ctypes.c_uint)]


def launch_pdl(fn, grid: tuple, block: tuple, smem: int, args: tuple):
    """A launch of ``fn`` (a CuPy RawKernel) on the current stream with programmatic dependent launch allowed
    (cuLaunchKernelEx with programmaticStreamSerializationAllowed; a CUDA graph captures it as a programmatic
    edge): its arguments as :func:`arguments` makes them (one-element NumPy arrays by value, CuPy arrays as
    pointers, NumPy scalars), marshalled once."""
    import cupy

    vals = []
    for a in args:
        if isinstance(a, np.ndarray):
            vals.append(a)  # by value: the driver copies the parameter from its bytes
        elif isinstance(a, cupy.ndarray):
            vals.append(ctypes.c_void_p(a.data.ptr))
        elif isinstance(a, np.integer):
            vals.append(np.array([a]))  # its own width: int for np.int32, long long for np.int64
        else:
            raise HopperError(f"launch_pdl: an argument of type {type(a).__name__} is not one a kernel here takes")
    ptrs = [v.ctypes.data if isinstance(v, np.ndarray) else ctypes.addressof(v) for v in vals]
    params = (ctypes.c_void_p * len(vals))(*ptrs)
    attr = _Attribute(id=PROGRAMMATIC_STREAM_SERIALIZATION, value=1)
    lib, handle = _driver(), ctypes.c_void_p(getattr(fn, "kernel", fn).ptr)
    dims = [tuple(d) + (1,) * (3 - len(d)) for d in (grid, block)]

    def launch() -> None:
        cfg = _Config(dims[0], dims[1], smem, cupy.cuda.get_current_stream().ptr, ctypes.pointer(attr), 1)
        _check(lib.cuLaunchKernelEx(ctypes.byref(cfg), handle, params, None), "cuLaunchKernelEx")

    launch.keep = (vals, params, attr)  # what the driver reads at each launch lives as long as the launch
    return launch


def supports(geom: dict[str, int], M: int, N: int, K: int) -> str | None:
    """Why a kernel cannot take this shape (the TMA reads rows whose pitch is a multiple of 16 bytes: K a multiple
    of 8 in BF16), or None."""
    if geom["tma"] and K % 8:
        return f"K = {K} is not a multiple of 8: the TMA reads rows of A and Bt whose pitch is a multiple of 16 bytes"
    return None


def arguments(geom: dict[str, int], A, Bt, C, M: int, N: int, K: int) -> tuple:
    """The kernel's arguments for C = A·Btᵀ: pointers for the kernels without TMA; the tensor maps of A and Bt
    (and of C, where C is stored by the TMA and N is a multiple of 4, the pitch rule for FP32) for the others."""
    ints = (np.int32(M), np.int32(N), np.int32(K))
    if not geom["tma"]:
        return (A, Bt, C, *ints)
    promote = promotion(geom)
    ma = tensor_map(A.data.ptr, BFLOAT16, 2, M, K, geom["abox"], geom["bk"], promote)
    mb = tensor_map(Bt.data.ptr, BFLOAT16, 2, N, K, geom["bbox"], geom["bk"], promote)
    if not geom["persistent"]:
        return (ma, mb, C, *ints)
    c_tma = int(geom["store"] == 1 and N % 4 == 0)
    mc = tensor_map(C.data.ptr, FLOAT32, 4, M, N, geom["cbox_rows"], geom["cbox_cols"]) if c_tma else np.zeros(1, MAP)
    return (ma, mb, mc, C, *ints, np.int32(c_tma))
