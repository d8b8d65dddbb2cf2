/* container_identity.h — the container of a process under a given /proc root (the reading behind
 * sop_container_of and the evidence group `container`; engine/collect/container_identity.c).
 * Depends on sop.h. */
#ifndef SOP_CONTAINER_IDENTITY_H
#define SOP_CONTAINER_IDENTITY_H

#include "sop.h"

/* pid's container from proc_root/PID/cgroup (NULL: "/proc") and the runtime's state files under
 * the host root ($SOP_HOST_ROOT, /proc/1/root or /). 1 in a container, 0 not (*out cleared),
 * SOP_ENOTARGET when the cgroup file is unreadable. */
int sop__container_identify(const char *proc_root, int pid, sop_container *out);

#endif
