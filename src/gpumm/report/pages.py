"""The report's pages: one executed notebook each, and the study IDs it shows."""

PAGES = [
    {
        "notebook": "ladder",
        "short": "Ladder",
        "title": "The ladder: every variant, its share of cuBLAS, its gain",
        "ids": ["S1-C1"],
    },
    {
        "notebook": "tensor",
        "short": "Tensor cores",
        "title": "The race on the tensor cores: BF16 from WMMA to warp-specialized wgmma and TMA",
        "ids": ["DC-TENSOR"],
    },
    {
        "notebook": "model",
        "short": "A model's layers",
        "title": "A real model's layers: from decoding one token (DRAM-bound) to a prompt (tensor-bound)",
        "ids": ["DC-MODEL"],
    },
    {
        "notebook": "seed000",
        "short": "Seed 000",
        "title": "Seed 000: the GPU on the matrix-matrix multiply (G80)",
        "ids": ["S0-T1", "S0-T3", "S0-S35", "S0-S36", "S0-S37", "S0-F7"],
    },
    {"notebook": "seed001", "short": "Seed 001", "title": "Seed 001: Efficient CUDA (P100)", "ids": ["S1-F4", "S1-C1"]},
    {
        "notebook": "seed002",
        "short": "Seed 002",
        "title": "Seed 002: matrix multiplication and transpose (GTX 480)",
        "ids": ["S2-MM", "S2-CPU", "S2-NSQ", "S2-CGMA"],
    },
    {
        "notebook": "transpose",
        "short": "Transpose",
        "title": "Seed 002's transpose: from naive to the copy's bandwidth",
        "ids": ["S2-TR"],
    },
    {
        "notebook": "seed003",
        "short": "Seed 003",
        "title": "Seed 003: device memory, the CGMA ratio and the SDK's matrixMul (MCS 572)",
        "ids": ["S3-MEM", "S3-CGMA", "S3-SDK"],
    },
    {
        "notebook": "coalescing",
        "short": "Coalescing",
        "title": "Coalesced against uncoalesced reads: the micro-benchmark",
        "ids": ["DC-COAL", "S0-T2"],
    },
    {
        "notebook": "memory_modes",
        "short": "Memory modes",
        "title": "Memory abstractions: manual, UVA (zero-copy), unified (managed)",
        "ids": ["DC-UM", "S1-F4", "S1-F5", "S1-F6", "S1-C2", "S1-M"],
    },
    {
        "notebook": "compare",
        "short": "GPUs compared",
        "title": "Several GPUs side by side: the same kernels on every archived run",
        "ids": ["DC-GPUS"],
    },
    {
        "notebook": "profiles",
        "short": "Profiles",
        "title": "Compiler resources and Nsight Compute profiles",
        "ids": ["DC-PROF"],
    },
]


def names() -> list[str]:
    return [p["notebook"] for p in PAGES]
