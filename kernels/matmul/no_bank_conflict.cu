// no_bank_conflict: coalesced_bt with B's tile padded by one column.
//
// Source: seed 001 Section 4.2.3 ("loading B in a row-oriented fashion and
// changing the computation to account for this") and seed 002 ("coalesced
// matrix multiplication without bank conflicts").
//
// Adds over `coalesced_bt`: Bs is TILE x (TILE + 1). The inner product still
// reads a column of Bs across the warp, but consecutive rows now start one
// word apart, so the 32 reads fall in 32 different banks and are served at
// once instead of one after another. Nothing else changes.

#define PAD 1
#define matmul_coalesced_bt matmul_no_bank_conflict
#include "coalesced_bt.cu"
