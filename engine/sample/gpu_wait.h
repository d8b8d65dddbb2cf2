/* gpu_wait.h — is a thread sample waiting on the GPU? The pure parts of the answer: the text of
 * a Python line that waits for the device (a device-to-host copy or an explicit synchronize), the
 * syscalls a CUDA wait sleeps in, and the device files that mark a process as a GPU user
 * (engine/sample/gpu_wait.c; used by engine/sample/sample_agg.c and engine/sample/sampler.c).
 * Depends on libc. */
#ifndef SOP_GPU_WAIT_H
#define SOP_GPU_WAIT_H

#include <stdbool.h>

/* True when a source line's text makes the host wait for the device: a copy to the host
 * (`.item()`, `.cpu()`, `.tolist()`, `.numpy()`, `.to("cpu")`, `.to(device="cpu")`) or an
 * explicit synchronisation (`synchronize(`: torch.cuda.synchronize, Event/Stream.synchronize,
 * cupy's, `_cuda_synchronize`). Comments (after '#') do not count. */
bool sop__gpu_sync_line(const char *text);

/* True for the path of a GPU device file a compute job opens: /dev/nvidia<N>, /dev/nvidiactl,
 * /dev/nvidia-uvm (NVIDIA), /dev/kfd, /dev/dri/renderD<N> (AMD ROCm, Intel). */
bool sop__gpu_device_path(const char *path);

/* The syscalls (this architecture's numbers) a host thread may sit in while it waits for the
 * device: ioctl (the driver's wait), poll / ppoll / epoll_wait on the driver's event fds,
 * futex (a blocking-sync wait handed to a driver thread), sched_yield (the yield variant of the
 * spin wait), nanosleep. */
bool sop__gpu_wait_syscall(long nr);
/* True when nr is ioctl(2): with a GPU device fd as its first argument the thread is inside
 * the driver. */
bool sop__syscall_is_ioctl(long nr);

#endif
