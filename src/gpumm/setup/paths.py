"""Every path the pipeline reads or writes, in one place."""

from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]  # src/gpumm/setup/paths.py -> the checkout
KERNELS = ROOT / "kernels"
CATALOG = KERNELS / "catalog.yaml"
SCHEMAS = ROOT / "workflow" / "schemas"
CONFIG_SCHEMA = SCHEMAS / "config.schema.yaml"
CATALOG_SCHEMA = SCHEMAS / "catalog.schema.yaml"
NOTEBOOKS = ROOT / "notebooks"
REFERENCE = ROOT / "data" / "reference"
PUBLISHED = ROOT / "data" / "published" / "published_numbers.csv"
STUDIES = ROOT / "data" / "studies.csv"  # every artefact's ID, source, what it shows, and its page
IMPORTED = ROOT / "data" / "imported"  # profiles imported from nvprof (python -m gpumm import-profile)

# The tables `collect` writes into results/tables/ (CSV), besides source.json.
TABLE_NAMES = (
    "samples",
    "summary",
    "profiles",
    "resources",
    "variants",
    "published",
    "loops",
    "estimate",
    "ladder",
    "bf16_ladder",
    "claim_cases",
    "claim_verdicts",
    "kernel_notes",
    "roofline",
    "bf16_roofline",
    "bandwidth",
    "coalescing",
    "coalescing_summary",
    "coalescing_profile",
    "coalescing_ratio",
    "overhead",
    "verification",
    "profile_summary",
    "crossover",
    "transpose",
    "transpose_goal",
    "hierarchy_latency",
    "hierarchy_levels",
    "hierarchy_bandwidth",
    "device_memory",
    "cgma",
    "imported_profiles",
    "imported_summary",
    "compare",
    "study_cost",
    "headlines",
    "tuning",
    "paired",
    "paired_members",
    "verdicts",
)

# Relative to the working directory of a run (the Snakemake workdir).
RESULTS = Path("results")


def build_dir(variant: str, results: Path = RESULTS) -> Path:
    """Folder of one variant's compiler outputs."""
    return results / "build" / variant


def raw_dir(variant: str, results: Path = RESULTS) -> Path:
    """Folder of one variant's measurements, metadata and profile."""
    return results / "raw" / variant


def shown(path) -> str:
    """``path`` as a message shows it: relative to the working directory or the checkout where it is inside."""
    p = Path(path)
    for base in (Path.cwd(), ROOT):
        try:
            return str(p.resolve().relative_to(base.resolve()))
        except ValueError:
            continue
    return str(p)
