"""The dispatcher's rule applied: the kernel a fitted rule (gpumm.analyse.dispatch) gives a shape.

The rule's fitted shapes, each with its kernels ranked by their cost (time against the reference's) there; a shape
takes the nearest fitted shape's ranking (``distance``), between two fitted token counts of a layer the kernel whose
worse cost of the two is least (``bracket``, ``between``: the BF16 rule), re-ranked by how the shape fills each
kernel's tiles and waves where the rule knows them (``fill``, ``load``: the FP32 rule). The model's dispatch step
(gpumm.run.layers) and the tables (gpumm.analyse.dispatch) both pick here.
"""

import math

M_WEIGHT = 4.0  # an octave of M counts as much as four of N or K


def distance(rule: dict, point: dict, M: int, N: int, K: int) -> float:
    """How far a fitted shape is from M x N x K: octaves of M (times the rule's weight), of N and of K."""
    w = rule.get("m_weight", M_WEIGHT)
    return w * abs(math.log2(M / point["M"])) + abs(math.log2(N / point["N"])) + abs(math.log2(K / point["K"]))


def tile_of(variant) -> list[int] | None:
    """The block tile of C a build computes, [BM, BN] from its defines (BM and BN, or TILE), else None."""
    d = dict(variant.defines)
    if "BM" in d and "BN" in d:
        return [int(d["BM"]), int(d["BN"])]
    return [int(d["TILE"])] * 2 if "TILE" in d else None


def fill(tile: list[int] | None, M: int, N: int) -> float:
    """The share of a build's tiles of C that the M x N product fills (1 without a known tile)."""
    if not tile:
        return 1.0
    bm, bn = tile
    return M * N / (-(-M // bm) * bm * -(-N // bn) * bn)


def block_of(variant) -> dict | None:
    """How a build's grid covers C: blocks per tile (``cl``, a cluster's blocks splitting k), whether the grid is
    one block per SM (``persistent``: the tiles' work spread evenly over them), and how many of its blocks an SM
    runs side by side at full speed each (``per_sm``: the catalog's ``sm_blocks``, else its MINB, else 1), and, for
    a build whose blocks multiply a last column of tiles at most FOLD wide as its few columns, ``fold``; None for a
    library."""
    if not variant.is_cuda:
        return None
    d = dict(variant.defines)
    per_sm = variant.sm_blocks or int(d.get("MINB", 1))
    block = {"cl": int(d.get("CL", 1)), "persistent": bool(variant.grid_names_sms), "per_sm": per_sm}
    return block | ({"fold": int(d["FOLD"])} if int(d.get("FOLD", 0)) else {})


def columns_of(tile: list[int], block: dict | None, N: int) -> int:
    """The whole tiles along N a build's waves count: N over its tile's width, less a last column of tiles at most
    ``fold`` wide, whose blocks multiply only its few columns (cluster_tile's FOLD: light beside a whole tile)."""
    fold = (block or {}).get("fold", 0)
    return -(-(N - min(N - 1, fold)) // tile[1])


def load(tile: list[int] | None, block: dict | None, sms: int, M: int, N: int) -> float:
    """The time of an M x N product in a build's waves, per output of C: its blocks (tiles times ``cl``, a narrow
    column of tiles multiplied as columns not counted: ``columns_of``) in waves of ``per_sm`` a SM (a block beyond
    them shares an SM's throughput: the SM takes longer), or spread evenly over the SMs by a persistent grid. 1 /
    fill where the tile or the block is unknown."""
    if not tile or not block:
        return 1 / fill(tile, M, N)
    blocks = -(-M // tile[0]) * columns_of(tile, block, N) * block["cl"]
    per_sm = block.get("per_sm", 1)
    waves = blocks / sms if block["persistent"] else -(-blocks // (sms * per_sm))
    return waves * tile[0] * tile[1] / block["cl"] / (M * N)


def _work(rule: dict, kernel: str, M: int, N: int) -> float:
    """A kernel's time for an M x N product per output of C, as the rule can tell it: in waves of its blocks where
    it knows the GPU's SMs (``load``), else by how fully its tiles cover C (1 / ``fill``)."""
    tile = rule["tiles"].get(kernel)
    if rule.get("sms"):
        return load(tile, rule["blocks"].get(kernel), rule["sms"], M, N)
    return 1 / fill(tile, M, N)


def bracket(rule: dict, M: int, N: int, K: int) -> tuple[dict, dict] | None:
    """The two fitted shapes of the same weight (N x K) whose M are the nearest below and above M, where the rule
    has no ``tiles`` (the BF16 rule: its fitted shapes are a layer's token counts) and M lies strictly between two.
    None elsewhere (a fitted M takes its own ranking)."""
    if rule.get("tiles") is not None:
        return None
    same = [p for p in rule["points"] if p["N"] == N and p["K"] == K and "cost" in p]
    if any(p["M"] == M for p in same):
        return None
    below = [p for p in same if p["M"] < M]
    above = [p for p in same if p["M"] > M]
    if not below or not above:
        return None
    return max(below, key=lambda p: p["M"]), min(above, key=lambda p: p["M"])


def between(lo: dict, hi: dict, M: int, max_m: dict[str, int | None]) -> dict[str, float]:
    """The kernels that may take M between the fitted shapes ``lo`` and ``hi``, each with its worse cost of the
    two: those ranked at both that take M, and those ranked at ``lo`` whose build takes M but not ``hi``'s M (a
    build of at most 8 tokens between 1 and 16: its cost at ``lo`` alone). A kernel ranked at one end only for
    another reason (it failed its check at the other) is left out."""
    out = {}
    for k in lo["ranking"]:
        if k not in max_m or (max_m[k] is not None and M > max_m[k]):
            continue
        cap = max_m[k]
        if k in hi["ranking"]:
            out[k] = max(lo["cost"][k], hi["cost"][k])
        elif cap is not None and cap < hi["M"]:
            out[k] = lo["cost"][k]
    return out


def pick(rule: dict, M: int, N: int, K: int, max_m: dict[str, int | None]) -> str:
    """The kernel the rule gives M x N x K: the nearest fitted shape's fastest kernel that takes M tokens
    (``max_m``: each kernel's MAX_M, None for any), else the next nearest shape's. ValueError if none takes it.
    Between two fitted token counts of the same layer (the BF16 rule, ``bracket``), the kernel whose worse cost of
    the two is least (``between``): where a kernel's lead at one end turns into a loss at the other
    (bf16_pingpong on the logits layer of an H100: 7% faster than cuBLAS BF16 at 1024 tokens, 30% slower at 4096),
    the shape between is not left to whichever end is nearer.
    A rule with ``tiles`` (the FP32 rule) ranks the nearest shape's kernels again by their cost there scaled by
    how much less (or more) of their tiles M x N fills than that shape did: 4097 x 33 fills two columns of 32-wide
    tiles, half their work wasted, where 8192 x 32 filled one. A rule that knows the GPU's SMs (``sms``) and each
    kernel's ``blocks`` scales by the work of the busiest SM instead (``load``): 1023 x 1025 makes 72 tiles of 128
    x 128 where 1024 x 1024 made 64, and with 2 blocks a tile 12 of 132 SMs get two blocks (twice the time)."""
    takes = [k for k, m in max_m.items() if m is None or M <= m]
    ends = bracket(rule, M, N, K)
    if ends:
        worse = between(*ends, M, max_m)
        if worse:
            return min(worse, key=worse.get)
    for point in sorted(rule["points"], key=lambda p: distance(rule, p, M, N, K)):
        takers = [k for k in point["ranking"] if k in takes]
        if takers and rule.get("tiles") is not None:
            cost = point["cost"]
            return min(takers, key=lambda k: cost[k] * _work(rule, k, M, N) / _work(rule, k, point["M"], point["N"]))
        if takers:
            return takers[0]
    raise ValueError(f"no kernel of the rule takes M = {M} (N = {N}, K = {K})")
