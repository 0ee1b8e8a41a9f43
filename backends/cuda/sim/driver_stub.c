/* libportable CUDA backend — an empty stand-in for the NVIDIA driver
 * library, built as libcuda.so.1 in a directory of its own. The simulated
 * runtime, like the real one, looks for libcuda.so.1 to decide whether a
 * driver is installed; the simulator's tests put this directory on
 * LD_LIBRARY_PATH for "driver present" and leave it off for "no driver".
 * Nothing calls into it. */
int ptcu_sim_driver_stub;
