"""gpumm: how memory decides the speed of GPU matrix multiply, measured again.

The package does the work of the pipeline (build, run, verify, time, profile,
parse, collect); Snakemake rules call it through ``python -m gpumm``.
"""

__version__ = "0.1.0"
