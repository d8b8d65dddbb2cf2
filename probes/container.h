/* container.h — which container a process runs in, as its cgroup path names it: the runtime
 * (podman, docker, containerd, CRI-O) where the path's scope or folder says, the container id,
 * and the Kubernetes pod's UID where a kubepods path carries one. The names (the container's,
 * the pod's) come from the runtime's state files: engine/collect/container_identity.c.
 * Depends on libc only. */
#ifndef SOP_CONTAINER_H
#define SOP_CONTAINER_H

#include <stdbool.h>

#define SOP_CONTAINER_ID_MAX 128 /* a runtime's id: 64 hex digits, or a ctr name */

typedef struct {
    char runtime[16];              /* "podman", "docker", "containerd", "cri-o", or "" */
    char id[SOP_CONTAINER_ID_MAX]; /* "" when the process is in no container */
    char ctr_namespace[64];        /* a containerd path's namespace folder, when one named it */
    char pod_uid[40];              /* from kubepods-...-pod<UID>.slice or .../pod<UID>/ */
} sop_container_cgroup;

/* Parse /proc/PID/cgroup's text (NUL-terminated; a truncated file is read as far as it goes).
 * The first line naming a container wins; a conmon's own scope (libpod-conmon-, crio-conmon-)
 * is the runtime's monitor, not a container. A plain folder of 64 hex digits is a container id
 * (the runtime from its parent folder: docker, or a kubepods pod). Returns whether an id was
 * found; *out is cleared either way. */
bool sop__container_from_cgroup(const char *text, sop_container_cgroup *out);

/* For a path with no id the patterns know: its last two folders, as a containerd task's
 * namespace and id might be (`ctr run` under cgroupfs: /NAMESPACE/ID). Copies them into out
 * (runtime left "") and returns true when the path has two folders of printable names. The
 * caller keeps them only if the runtime's task folder for them exists. */
bool sop__container_ctr_guess(const char *text, sop_container_cgroup *out);

#endif
