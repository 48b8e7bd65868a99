"""Every path the pipeline reads or writes, in one place."""

from pathlib import Path

from gpumm.setup.table_index import TABLES

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

# The tables `collect` writes into results/tables/ (CSV), besides source.json: gpumm.setup.table_index.
TABLE_NAMES = tuple(TABLES)

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
