"""The tables ``collect`` writes into results/tables/: for each, the module whose function makes it and what a
row holds. The workflow's list of tables (gpumm.setup.paths.TABLE_NAMES) and the manual's page of tables
(docs/tables.md, written by ``python -m gpumm docs``) both read it."""

TABLES = {
    "samples": (
        "gpumm.analyse.tables",
        "every timed sample of every variant: shape, memory mode, time, rates, "
        "checks, clocks and power (the raw samples.csv of each variant, concatenated)",
    ),
    "summary": (
        "gpumm.analyse.tables",
        "one row per variant, shape and memory mode: median time and rates, their "
        "spread, the checks, the clock and power state of the set",
    ),
    "profiles": (
        "gpumm.analyse.tables",
        "every Nsight Compute metric of every profiled launch (the raw profile.csv files, concatenated)",
    ),
    "resources": (
        "gpumm.analyse.tables",
        "each CUDA kernel's registers, stack, spills and shared memory from "
        "ptxas, with its threads per block and theoretical occupancy",
    ),
    "variants": (
        "gpumm.analyse.tables",
        "each variant: family, defines, operation, study IDs, where its numbers "
        "come from (measured, replayed, not measured) and whether they are stale",
    ),
    "published": (
        "data/published/published_numbers.csv",
        "the sources' own numbers, typed with the table or figure they come from (copied as it is)",
    ),
    "loops": (
        "gpumm.build.loops",
        "the inner loop of each kernel in PTX and SASS: instructions, FMAs, loads, the tensor-core instructions",
    ),
    "estimate": (
        "gpumm.analyse.seed000",
        "seed 000's estimate of each kernel from its PTX loop: CGMA, the potential GFLOP/s, the bandwidth it needs",
    ),
    "ladder": (
        "gpumm.analyse.rates",
        "the FP32 ladder at the ladder's size: each rung's rate, its share of cuBLAS and its gain over the rung below",
    ),
    "bf16_ladder": (
        "gpumm.analyse.tensor",
        "the BF16 ladder on the tensor cores: each rung's rate at each size, its share of cuBLAS BF16",
    ),
    "claim_cases": (
        "gpumm.analyse.claims",
        "each part of each claim of the sources, with the measured value, the rule and whether it holds",
    ),
    "claim_verdicts": ("gpumm.analyse.claims", "one verdict per claim, from its parts"),
    "kernel_notes": (
        "gpumm.setup.catalog",
        "each kernel family's file, label, header (what it adds, why, where it comes from) and its excerpt",
    ),
    "roofline": (
        "gpumm.analyse.roofline",
        "the FP32 kernels' arithmetic intensity and rate under the FP32 roof and the memory roofs",
    ),
    "bf16_roofline": ("gpumm.analyse.roofline", "the BF16 kernels' points under the tensor-core roof"),
    "roof_checks": (
        "gpumm.analyse.roofline",
        "the failed checks of both rooflines: a kernel measured above a roof, which roof and by how much",
    ),
    "model_read": (
        "gpumm.analyse.layers",
        "the model step's read rate: each read_stream pattern and the device copy, and the one chosen",
    ),
    "model_ceiling": (
        "gpumm.analyse.layers",
        "each model layer's weight read alone, cold, timed as the kernels: its rate and share of the read rate, "
        "about the most of the DRAM bound a kernel reading the weight once can be expected to reach at that size",
    ),
    "model_shapes": (
        "gpumm.analyse.layers",
        "each model shape (layer, M tokens): bytes, flops, its DRAM and tensor bounds, regime, fitted or held out",
    ),
    "model_rates": (
        "gpumm.analyse.layers",
        "each kernel at each model shape, weights cold or warm: median, quartiles, rate, shares of the bounds "
        "and of cuBLAS BF16 in the same rounds",
    ),
    "model_dispatch": (
        "gpumm.analyse.layers",
        "the dispatcher at each model shape: the kernel its rule picked and from where, its shares, the µs a launch "
        "takes over the bound, its goal, and whether the layer's weight read alone reaches a decode goal",
    ),
    "model_tokens": (
        "gpumm.analyse.layers",
        "the whole model per step and per token, decode and prefill: the dispatcher against cuBLAS BF16",
    ),
    "model_crossover": ("gpumm.analyse.layers", "each layer's crossover M, where its DRAM and tensor bounds meet"),
    "fp32_rates": (
        "gpumm.analyse.fp32_dispatch",
        "FP32 through the model's steps: each FP32 kernel at each fit and held-out shape, weights cold or warm: "
        "median, quartiles, rate, share of the FP32 peak and of cuBLAS SGEMM in the same rounds",
    ),
    "fp32_dispatch": (
        "gpumm.analyse.fp32_dispatch",
        "the FP32 dispatcher at each held-out shape and model layer: its pick and from which fit shape, its share "
        "of cuBLAS SGEMM, the goal at the ladder's odd shapes",
    ),
    "bandwidth": (
        "gpumm.analyse.access_patterns",
        "the copy bandwidths (host to device, pinned and pageable, device to device): median GB/s",
    ),
    "coalescing": (
        "gpumm.analyse.access_patterns",
        "every sample of the coalescing micro-benchmark: pattern, regime, stride, offset, time, GB/s",
    ),
    "coalescing_summary": (
        "gpumm.analyse.access_patterns",
        "each access pattern and regime: median and quartile GB/s, its working set against the L2",
    ),
    "coalescing_profile": (
        "gpumm.analyse.access_patterns",
        "the coalescing patterns' counters (sectors per request, DRAM bytes)",
    ),
    "coalescing_ratio": (
        "gpumm.analyse.access_patterns",
        "reading by rows over reading by columns, per regime (S0-T2)",
    ),
    "overhead": (
        "gpumm.analyse.floor",
        "the launch overhead: an empty kernel launched alone, in a stream and in a graph",
    ),
    "verification": (
        "gpumm.analyse.tables",
        "each variant's checks at each shape and mode: exact or rounding, error, tolerance, reference",
    ),
    "profile_summary": (
        "gpumm.analyse.counters",
        "each profiled kernel's counters in the units the pages use: "
        "DRAM bytes, bank conflicts, sectors per request, occupancy",
    ),
    "crossover": ("gpumm.analyse.rates", "the size from which each GPU variant is faster than each CPU baseline"),
    "transpose": (
        "gpumm.analyse.transposes",
        "each transpose and the copy kernel: GB/s at each size, share of the copy kernel and of the device copy",
    ),
    "transpose_goal": (
        "gpumm.analyse.transposes",
        "the transposes' goal: the best transpose's share of the copy kernel, and whether it is met",
    ),
    "hierarchy_latency": ("gpumm.analyse.memory_levels", "pointer-chasing latency at each working set"),
    "hierarchy_levels": (
        "gpumm.analyse.memory_levels",
        "each memory level's range of working sets and its latency, in ns and cycles",
    ),
    "hierarchy_bandwidth": ("gpumm.analyse.memory_levels", "each level's bandwidth (shared memory, L2, DRAM)"),
    "device_memory": ("gpumm.analyse.memory_levels", "the memory of the sources' GPUs (published) beside this run's"),
    "cgma": ("gpumm.analyse.ratios", "compute to global memory access, from the PTX model and from the counters"),
    "imported_profiles": ("gpumm.profile.nvprof", "profiles imported from nvprof CSV (data/imported/)"),
    "imported_summary": ("gpumm.analyse.counters", "the imported profiles in the units of profile_summary"),
    "compare": (
        "gpumm.analyse.compare",
        "every archived run's headline numbers (and this run's when measured), with the hardware number each tracks",
    ),
    "study_cost": (
        "gpumm.archive.reference",
        "what the whole study cost on each archived run: wall time, GPU-busy time, steps",
    ),
    "headlines": (
        "gpumm.analyse.headlines",
        "the index's headline numbers, each with its page and anchor, each from one table: best_share_N and "
        "best_bf16_share_N from verdicts.share (paired) or summary.gflops (unpaired), efficient_* from "
        "verdicts.per_joule, transpose_share from transpose_goal.of_copy_kernel, rows_over_cols from "
        "coalescing_ratio.ratio, zero_copy_cublas and cold_managed_cublas from summary.median_ms, launch_floor "
        "from overhead.median_us, claims from claim_verdicts.verdict; the kernel a row names is in docs/kernels.md",
    ),
    "tuning": ("gpumm.analyse.race", "each tuning candidate's rate and share of cuBLAS; the chosen one"),
    "paired": (
        "gpumm.analyse.paired",
        "each paired comparison: the share of the reference with its 95% interval, burst and sustained",
    ),
    "paired_members": ("gpumm.analyse.paired", "each kernel of each paired comparison: power, energy, work per joule"),
    "verdicts": (
        "gpumm.analyse.paired",
        "each race's rungs: share, interval, regime, gain over the rung below, power and work per joule",
    ),
}
