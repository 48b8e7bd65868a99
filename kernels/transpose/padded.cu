// padded: `shared` with the tile padded by one column, (TILE + 1) words per
// row.
//
// Source: seed 002, "Matrix transpose": the optimised version, a
// (BLOCK + 1) x BLOCK tile, "no bank conflicts".
//
// Adds over `shared`: consecutive rows of the tile now start one word apart,
// so the 32 words of a column fall in 32 different banks and the write phase
// reads them at once; the shared-memory bank conflicts go to zero. Nothing
// else changes.

#define PAD 1
#define transpose_shared transpose_padded
#include "shared.cu"
