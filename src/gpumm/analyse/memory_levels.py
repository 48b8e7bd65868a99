"""The memory hierarchy (S3-MEM): plateaus of the latency sweep named L1, L2 and DRAM, the bandwidth of each level,
and seed 003's device-memory table beside the run's GPU.

Pure functions on the run's tables, tested on the CPU.
"""

import math

import pandas as pd

LEVELS = ("L1", "L2", "DRAM")


def latency_plateaus(
    sizes, latencies, tolerance: float = 0.25, min_points: int = 2, l1_bytes=None, l2_bytes=None
) -> pd.DataFrame:
    """Plateaus of a latency sweep (buffer size ascending): runs of consecutive sizes whose latency stays
    within ``tolerance`` (relative) of the run's first point, at least ``min_points`` long. The points of a
    transition between two levels form short runs and are left out.

    A plateau is named by the smallest memory that holds its largest buffer: L1 up to ``l1_bytes`` (the
    shared memory an SM has, the part of its unified L1 it can always cache in), L2 up to ``l2_bytes``, DRAM
    from there; a plateau that starts inside the L2 and ends past it is "L2 and DRAM". Without the capacities
    (an old run's provenance) the first plateau is L1, the last DRAM and those between L2. A name that comes
    twice is numbered: "L1 (2)" is a second plateau inside the L1's capacity."""
    pts = sorted(zip(sizes, latencies))
    runs, cur = [], []
    for size, lat in pts:
        if cur and abs(lat / cur[0][1] - 1) > tolerance:
            runs.append(cur)
            cur = []
        cur.append((size, lat))
    if cur:
        runs.append(cur)
    runs = [r for r in runs if len(r) >= min_points]
    rows, seen = [], {}
    for i, r in enumerate(runs):
        first, last = r[0][0], r[-1][0]
        if l1_bytes and l2_bytes:
            if last <= l1_bytes:
                level = "L1"
            elif last <= l2_bytes:
                level = "L2"
            elif first <= l2_bytes:
                level = "L2 and DRAM"
            else:
                level = "DRAM"
        elif i == 0:
            level = "L1"
        elif i == len(runs) - 1:
            level = "DRAM"
        else:
            level = "L2"
        seen[level] = seen.get(level, 0) + 1
        lat = [x[1] for x in r]
        rows.append(
            {
                "level": level if seen[level] == 1 else f"{level} ({seen[level]})",
                "from_bytes": first,
                "to_bytes": last,
                "points": len(r),
                "latency": float(pd.Series(lat).median()),
            }
        )
    return pd.DataFrame(rows, columns=["level", "from_bytes", "to_bytes", "points", "latency"])


def hierarchy_tables(samples: pd.DataFrame, gpu: dict) -> dict[str, pd.DataFrame]:
    """The latency sweep (median per size), its plateaus (in ns and cycles), and the bandwidth per level."""
    empty = {
        "hierarchy_latency": pd.DataFrame(columns=["bytes", "ns_per_step", "cycles_per_step"]),
        "hierarchy_levels": pd.DataFrame(
            columns=["level", "from_bytes", "to_bytes", "points", "latency_ns", "latency_cycles"]
        ),
        "hierarchy_bandwidth": pd.DataFrame(columns=["level", "median_gbs", "q25_gbs", "q75_gbs"]),
    }
    if "kind" not in samples or samples.empty:
        return empty
    ok = samples[samples.status == "ok"]
    lat = ok[ok.kind == "latency"].groupby("bytes")[["ns_per_step", "cycles_per_step"]].median().reset_index()
    if len(lat):
        ns = latency_plateaus(
            lat.bytes, lat.ns_per_step, l1_bytes=gpu.get("smem_per_sm"), l2_bytes=gpu.get("l2_bytes")
        ).rename(columns={"latency": "latency_ns"})
        ns["latency_cycles"] = [
            float(lat[(lat.bytes >= a) & (lat.bytes <= b)].cycles_per_step.median())
            for a, b in zip(ns.from_bytes, ns.to_bytes)
        ]
    else:
        ns = empty["hierarchy_levels"]
    bw = ok[ok.kind == "bandwidth"].groupby("level").gbs
    bandwidth = pd.DataFrame(
        {"median_gbs": bw.median(), "q25_gbs": bw.quantile(0.25), "q75_gbs": bw.quantile(0.75)}
    ).reset_index()
    return {"hierarchy_latency": lat, "hierarchy_levels": ns, "hierarchy_bandwidth": bandwidth}


DEVICE_MEMORY = [  # (quantity as typed from seed 003's table, provenance key, scale to the table's unit)
    ("32-bit registers per block", "regs_per_block", 1),
    ("shared memory per block", "smem_per_block", 1),
    ("constant memory", "constant_bytes", 1),
    ("global memory", "memory_bytes", 1 / 2**20),  # deviceQuery's "MBytes", which the lecture copied: MiB
    ("L2 cache", "l2_bytes", 1),
]


UNITS = {"MB": "MiB"}  # the lecture's "MB" are deviceQuery's MBytes, 2²⁰ bytes (the P100's 16276 is 16 GiB)


def device_memory_table(published: pd.DataFrame, gpu: dict) -> pd.DataFrame:
    """Seed 003's device-memory table (S3-MEM), one column per GPU it lists, and this run's GPU from the
    device's own properties (provenance); a property the run did not record is empty, never typed."""
    p = published[published.study_id == "S3-MEM"]
    table = p.pivot_table(index="quantity", columns="gpu", values="value", aggfunc="first", dropna=False)
    units = p.drop_duplicates("quantity").set_index("quantity").unit
    rows = []
    for quantity, key, scale in DEVICE_MEMORY:
        ours = gpu.get(key)
        rows.append(
            {
                "quantity": quantity,
                "unit": UNITS.get(units.get(quantity, ""), units.get(quantity, "")),
                **{g: table.at[quantity, g] if quantity in table.index else math.nan for g in table.columns},
                gpu.get("name", "this run's GPU"): ours * scale if ours is not None else math.nan,
            }
        )
    return pd.DataFrame(rows)
