# Read config.yaml and every --configfile strictly, before the `configfile:` that follows hands them to
# Snakemake (whose reading keeps the last of two equal keys and reports a YAML error without its line).
import sys
from pathlib import Path

from snakemake.exceptions import WorkflowError

sys.path.insert(0, str(Path(workflow.basedir) / "src"))

from gpumm.setup import config as gpumm_config

_problem = gpumm_config.read_files(
    ["config.yaml", *map(str, workflow.overwrite_configfiles or [])]
)
if _problem is not None:
    raise WorkflowError(f"{_problem}\nNothing was run.")
