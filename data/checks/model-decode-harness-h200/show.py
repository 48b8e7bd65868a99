"""The Nsight Compute CSVs of p2.sh (--page raw), a line per kernel: `python show.py FOLDER` (as run)."""

import csv
import glob
import sys

KEYS = [
    "Kernel Name",
    "gpu__time_duration.sum",
    "dram__bytes_read.sum",
    "dram__bytes_write.sum",
    "lts__t_sectors_srcunit_tex_op_read.sum",
    "lts__t_sectors_srcunit_tex_op_read_lookup_hit.sum",
    "dram__throughput.avg.pct_of_peak_sustained_elapsed",
    "lts__throughput.avg.pct_of_peak_sustained_elapsed",
    "l1tex__m_xbar2l1tex_read_bytes.sum",
    "lts__t_bytes.sum",
]
for f in sorted(glob.glob(sys.argv[1] + "/ncu-*.csv")):
    rows = [r for r in csv.reader(open(f)) if r]
    hdr = None
    for i, r in enumerate(rows):
        if "Kernel Name" in r:
            hdr, units, data = r, rows[i + 1], rows[i + 2 :]
            break
    print(f.split("/")[-1])
    if not hdr:
        print("  no data:", open(f.replace(".csv", ".err")).read()[-300:])
        continue
    for d in data:
        print(
            "  "
            + " | ".join(
                f"{k.split('.')[0][-20:]}={d[hdr.index(k)][:26]}{units[hdr.index(k)]}" for k in KEYS if k in hdr
            )
        )
