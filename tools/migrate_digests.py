"""One-off, 2026-11-27: certify each archive's variants under the token digest (gpumm.setup.digest).

Until then a variant's digest was a SHA-256 of its catalog entry, the raw bytes of its kernel file and
includes, and the bytes of src/gpumm/run/launch.py. This script, run once before launch.py or any kernel file
changed, recomputes that byte digest from the tree as it was; where it equals the digest a variant's
measurement recorded (raw/<variant>/meta.json), the code that made the numbers is the code of today, and the
variant's token digest is written to the archive's DIGESTS.json as certified ("how": "migrated"). A variant
whose byte digest already differed stays uncertified (stale). The archive's manifest is sealed again; no
measured file changes. It cannot be run again meaningfully once launch.py changed: SASS certification
(python -m gpumm certify) takes over.
"""

import dataclasses
import hashlib
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from gpumm.archive import reference  # noqa: E402
from gpumm.setup import catalog  # noqa: E402


def byte_digest(v: catalog.Variant) -> str:
    """The digest as gpumm.setup.catalog.Variant.digest made it before 2026-11-27."""
    h = hashlib.sha256()
    entry = {k: x for k, x in dataclasses.asdict(v).items() if k not in ("label", "studies", "rung_below")}
    if entry["arch"] is None:
        del entry["arch"]
    h.update(json.dumps(entry, sort_keys=True, default=list).encode())
    for f in v.inputs():
        h.update(f.read_bytes())
    h.update((ROOT / "src" / "gpumm" / "run" / "launch.py").read_bytes())
    return h.hexdigest()[:16]


def main() -> int:
    for archive in reference.available():
        certified, stale = {}, []
        for meta in sorted((archive / "raw").glob("*/meta.json")):
            try:
                v = catalog.from_id(meta.parent.name)
            except catalog.CatalogError:
                continue  # a study's folder, or a variant no longer in the catalog
            recorded = json.loads(meta.read_text()).get("digest")
            if recorded is None:
                continue
            if byte_digest(v) == recorded:
                certified[v.id] = {"digest": v.digest(), "how": "migrated", "measured_digest": recorded}
            else:
                stale.append(v.id)
        reference.write_certified(archive, certified)
        print(f"{archive.name}: {len(certified)} certified, stale: {', '.join(stale) or 'none'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
