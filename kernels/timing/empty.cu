// empty: a kernel that does nothing, one block of 32 threads. Its time per
// launch is the launch-overhead floor of each timing method (one launch
// between an event pair; launches queued back to back from Python; a CUDA
// graph of back-to-back launches): no kernel timed by that method can look
// faster, and a kernel whose time sits at the floor is measuring the launch,
// not its own work. See gpumm/overhead.py.

extern "C" __global__ void empty_kernel() {}
