"""gpumm: how memory decides the speed of GPU matrix multiply, measured again.

The package does the work of the pipeline; Snakemake rules call it through ``python -m gpumm STEP``
(``cli.py``). One folder per stage, in the order the data flows (docs/design.md, "The stage layout"):

- ``setup/``: configuration, the kernel catalog, paths, atomic file writing;
- ``build/``: nvcc and the host compiler, their resource reports, loop counts in PTX and SASS;
- ``run/``: the GPU (probe, lock, worker), launching, memory modes, verification, timing, measurement and the
  micro-benchmarks;
- ``profile/``: Nsight Compute sessions and their CSV, nvprof imports;
- ``archive/``: provenance, the run record, archived runs and their replay;
- ``analyse/``: tidy tables and the analyses, one module per study;
- ``report/``: the pages, their figures and labels, the front page.

A module imports nothing from a later stage.
"""

import os

# CuPy's CUB accelerator (on by default) compiles a block reduction with NVRTC and the CUB headers at first use,
# once per size class: 5.0 s for count_nonzero(~isfinite(x)) at 16 x 16 and 4.2 s more at 32 x 32 in a fresh
# process on an H100 (tools/cupy_startup.py; 0.27 s for both without it). Every check of every run paid it, on
# the GPU's critical path (the first transpose step of the H200 study of 2026-11-24 took 10.7 s against 0.6 s
# for the next ones). The checks' reductions need no CUB: CuPy's own reduction kernels compile in a fraction of
# a second. A value the user set is kept. This must run before CuPy is imported, hence here.
os.environ.setdefault("CUPY_ACCELERATORS", "")

__version__ = "0.1.0"
