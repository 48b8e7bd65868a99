// What a BF16 rung's cubin tells its launcher: one constant, `bf16_geom`, of this struct. The launcher
// (src/gpumm/run/hopper.py) reads the members' names from this declaration, in order, and their values from the
// cubin's symbol table; a rung sets them by name (BF16_GEOM(.rung = 3, .bm = BM, ...), in this order: the
// compiler refuses another), and a member it does not set is 0.
#pragma once

struct Bf16Geom {
    int rung;        // its rung on the BF16 ladder
    int bm, bn, bk;  // the block tile
    int stages;      // shared-memory stages of the pipeline
    int threads;     // threads per block
    int smem;        // dynamic shared memory, bytes
    int cluster;     // CTAs per cluster (1: none)
    int persistent;  // 1: grid = resident CTAs, each loops over tiles
    int store;       // 0: direct stores of C; 1: TMA store of C (when N % 4 == 0, else direct)
    int abox, bbox;  // rows of A's and of B's TMA box (its inner side: bk elements)
    int tma;         // 1: takes tensor maps (A, B[, C]); 0: takes pointers
    int gm;          // tile-order group height (persistent rungs)
    int cbox_cols;   // C's TMA store box: columns (fp32) and rows
    int cbox_rows;
    int l2_fetch;    // bytes the L2 fetches from the DRAM for a TMA load's miss (the maps' L2 promotion): 64, 128 or
                     // 256; 0: the launcher's default, 256
};
#define BF16_GEOM(...) extern "C" __constant__ Bf16Geom bf16_geom = {__VA_ARGS__}
