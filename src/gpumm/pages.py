"""The report's pages: one executed notebook each, and the study IDs it shows."""

PAGES = [
    {
        "notebook": "matmul_basics",
        "title": "Naive and tiled matrix multiply (seed 000)",
        "ids": ["S0-T1", "S0-T3"],
    },
    {
        "notebook": "profiles",
        "title": "Compiler resources and Nsight Compute profiles",
        "ids": ["DC-PROF"],
    },
]


def names() -> list[str]:
    return [p["notebook"] for p in PAGES]
