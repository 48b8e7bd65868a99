// Programmatic dependent launch (PDL, sm_90) for the decode streams (issue 40): what a kernel built with PDL = 1
// does, and how it tells the launcher. Not a kernel.
//
// A model's layers run back to back, and each launch pays its start and the drain of its last loads, a larger share
// of a small weight's time: read alone, the H200's 32 MiB output weight moves 77% of the card's read rate and
// QKV's 84%. Launched with the attribute programmaticStreamSerializationAllowed, a kernel's successor may start
// once every block of it has run pdl_launch_dependents: its blocks take the SMs the last ones leave and read
// their weight, which no kernel before writes, while those finish; they wait (pdl_wait: the grid before done,
// its writes visible) only before they read the tokens and before they write C. The weight read alone that
// way moves 98 to 100% of the read rate on every layer of the model (data/checks/model-decode-pdl-h200). Where
// it comes from: the CUDA programming guide's programmatic dependent launch, CUTLASS's and llama.cpp's use of it
// between a model's kernels. PDL = 0: both calls are nothing and the build is the kernel as it was.
// bf16_pdl: the launcher (gpumm.run.hopper) reads it from the cubin's symbols and launches through
// cuLaunchKernelEx with the attribute (a CUDA graph captures the dependency).
#pragma once
#include "../need.cuh"
NEED(PDL);

#if PDL
extern "C" __constant__ int bf16_pdl = 1;
#endif

__device__ __forceinline__ void pdl_launch_dependents()
{
#if PDL
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

__device__ __forceinline__ void pdl_wait()
{
#if PDL
    asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}
