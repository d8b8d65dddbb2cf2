/* container_identity.c — the evidence group `container`, in one file: which container the target
 * runs in (the runtime and id from its cgroup path, probes/container.c), its name and Kubernetes
 * pod from the runtime's own state files read from the host (no runtime API is called), the
 * group's schema rows and its provider. sop_container_of (sop.h) is the same reading for a
 * caller that picks targets by container (sopctl --container / --pod). State files:
 *   podman      var/lib/containers/storage/overlay-containers/containers.json (id -> names)
 *   podman, CRI-O  {run,var/lib}/containers/storage/overlay-containers/ID/userdata/config.json
 *   containerd  run/containerd/io.containerd.runtime.v2.task/NAMESPACE/ID/config.json
 *   docker      var/lib/docker/containers/ID/config.v2.json (Name, Config.Labels)
 * An OCI config's annotations (docker: labels) give the pod: io.kubernetes.cri.sandbox-name /
 * -namespace / -uid and container-name (containerd), io.kubernetes.pod.name / .namespace / .uid
 * and io.kubernetes.container.name (CRI-O, cri-dockerd). Depends on probes/container.h,
 * probes/procfs.h, core/json.h, bridge/schema.h, provider.h. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../probes/container.h"
#include "../probes/procfs.h"
#include "bridge/bridge.h"
#include "bridge/schema.h"
#include "container_identity.h"
#include "json.h"
#include "provider.h"

#define STATE_FILE_MAX (16u << 20) /* a containers.json of thousands of containers */
#define CGROUP_FILE_MAX (64u << 10)
#define NAMESPACES_MAX 64 /* containerd namespaces looked in */

/* snprintf that says whether all of it fit (a path cut short is no path) */
__attribute__((format(printf, 3, 4))) static bool fmt(char *out, size_t cap, const char *f, ...)
{
    va_list ap;
    va_start(ap, f);
    int n = vsnprintf(out, cap, f, ap);
    va_end(ap);
    return n >= 0 && (size_t)n < cap;
}

/* Where the host's files are: $SOP_HOST_ROOT, else /proc/1/root when this process is in a
 * mount namespace other than init's (a container with hostPID), else "" (/ itself). */
static void host_root(char *out, size_t cap)
{
    const char *env = getenv("SOP_HOST_ROOT");
    if (env && *env && strcmp(env, "/") != 0) {
        fmt(out, cap, "%s", env);
        return;
    }
    out[0] = '\0';
    char a[64] = "", b[64] = "";
    ssize_t na = readlink("/proc/1/ns/mnt", a, sizeof a - 1);
    ssize_t nb = readlink("/proc/self/ns/mnt", b, sizeof b - 1);
    if (na > 0 && nb > 0) {
        a[na] = b[nb] = '\0';
        if (strcmp(a, b) != 0 && access("/proc/1/root/", X_OK) == 0)
            fmt(out, cap, "/proc/1/root");
    }
}

static sop_value *read_json(const char *path)
{
    char *text = NULL;
    size_t len = 0;
    if (sop__read_file_at(AT_FDCWD, path, STATE_FILE_MAX, &text, &len) < 0)
        return NULL;
    char err[128];
    sop_value *v = sop__json_parse(text, len, err, sizeof err);
    free(text);
    return v;
}

static void put(char *dst, size_t cap, const char *s)
{
    if (s && *s && !dst[0])
        fmt(dst, cap, "%s", s);
}

/* The pod from annotations or labels (an object of strings); each field kept if already set. */
static void from_annotations(const sop_value *a, sop_container *out)
{
    static const char *const pod[] = {"io.kubernetes.cri.sandbox-name", "io.kubernetes.pod.name"};
    static const char *const ns[] = {"io.kubernetes.cri.sandbox-namespace",
                                     "io.kubernetes.pod.namespace"};
    static const char *const uid[] = {"io.kubernetes.cri.sandbox-uid", "io.kubernetes.pod.uid"};
    static const char *const ctr[] = {"io.kubernetes.cri.container-name",
                                      "io.kubernetes.container.name"};
    if (!a || a->type != SOP_V_OBJ)
        return;
    for (size_t i = 0; i < 2; i++) {
        put(out->pod, sizeof out->pod, sop__v_get_str(a, pod[i]));
        put(out->pod_namespace, sizeof out->pod_namespace, sop__v_get_str(a, ns[i]));
        put(out->pod_uid, sizeof out->pod_uid, sop__v_get_str(a, uid[i]));
        put(out->container, sizeof out->container, sop__v_get_str(a, ctr[i]));
    }
    /* CRI-O names a container k8s_<container>_<pod>_...: its own name */
    put(out->name, sizeof out->name, sop__v_get_str(a, "io.kubernetes.cri-o.Name"));
}

/* An OCI bundle's config.json: its annotations; true when the file was there. */
static bool oci_config(const char *path, sop_container *out)
{
    sop_value *v = read_json(path);
    if (!v)
        return false;
    from_annotations(sop__v_get(v, "annotations"), out);
    sop__v_free(v);
    put(out->source, sizeof out->source, path);
    return true;
}

/* podman's list of containers: id -> names[0]. */
static bool podman_names(const char *root, sop_container *out)
{
    char path[PATH_MAX];
    if (!fmt(path, sizeof path, "%s/var/lib/containers/storage/overlay-containers/containers.json",
             root))
        return false;
    sop_value *v = read_json(path);
    if (!v)
        return false;
    bool found = false;
    for (const sop_value *c = v->type == SOP_V_ARR ? v->child : NULL; c && !found; c = c->next) {
        const char *id = sop__v_get_str(c, "id");
        if (!id || strcmp(id, out->id) != 0)
            continue;
        found = true;
        const sop_value *names = sop__v_get(c, "names");
        if (names && names->type == SOP_V_ARR && names->child && names->child->type == SOP_V_STR)
            put(out->name, sizeof out->name, names->child->str);
        put(out->source, sizeof out->source, path);
    }
    sop__v_free(v);
    return found;
}

static bool docker_config(const char *root, sop_container *out)
{
    char path[PATH_MAX];
    if (!fmt(path, sizeof path, "%s/var/lib/docker/containers/%s/config.v2.json", root, out->id))
        return false;
    sop_value *v = read_json(path);
    if (!v)
        return false;
    const char *name = sop__v_get_str(v, "Name");
    put(out->name, sizeof out->name, name && name[0] == '/' ? name + 1 : name);
    from_annotations(sop__v_get(sop__v_get(v, "Config"), "Labels"), out);
    sop__v_free(v);
    put(out->source, sizeof out->source, path);
    return true;
}

/* containerd's task folder for the id, in the namespace given or in any. */
static bool containerd_config(const char *root, const char *ns, sop_container *out)
{
    char dir[PATH_MAX], path[PATH_MAX];
    if (!fmt(dir, sizeof dir, "%s/run/containerd/io.containerd.runtime.v2.task", root))
        return false;
    if (ns && *ns) {
        return fmt(path, sizeof path, "%s/%s/%s/config.json", dir, ns, out->id) &&
               oci_config(path, out);
    }
    DIR *d = opendir(dir);
    if (!d)
        return false;
    bool found = false;
    int seen = 0;
    for (struct dirent *e; !found && seen < NAMESPACES_MAX && (e = readdir(d));) {
        if (e->d_name[0] == '.')
            continue;
        seen++;
        found = fmt(path, sizeof path, "%s/%s/%s/config.json", dir, e->d_name, out->id) &&
                oci_config(path, out);
    }
    closedir(d);
    return found;
}

static void names(const char *root, const char *ctr_ns, sop_container *out)
{
    char path[PATH_MAX];
    const char *rt = out->runtime;
    if (!strcmp(rt, "podman") || !rt[0])
        if (podman_names(root, out) && !rt[0])
            fmt(out->runtime, sizeof out->runtime, "podman");
    if (!strcmp(rt, "docker") || !rt[0])
        if (docker_config(root, out) && !rt[0])
            fmt(out->runtime, sizeof out->runtime, "docker");
    if (!strcmp(rt, "containerd") || !rt[0])
        if (containerd_config(root, ctr_ns, out)) {
            if (!rt[0])
                fmt(out->runtime, sizeof out->runtime, "containerd");
            put(out->name, sizeof out->name, out->id); /* ctr's id is the name it was given */
        }
    if (!strcmp(rt, "podman") || !strcmp(rt, "cri-o") || !rt[0]) {
        static const char *const bundles[] = {"run", "var/lib"};
        for (size_t i = 0; i < 2; i++) {
            if (fmt(path, sizeof path,
                    "%s/%s/containers/storage/overlay-containers/%s/userdata/config.json", root,
                    bundles[i], out->id) &&
                oci_config(path, out)) {
                if (!rt[0])
                    fmt(out->runtime, sizeof out->runtime, "%s", out->pod[0] ? "cri-o" : "podman");
                break;
            }
        }
    }
}

int sop__container_identify(const char *proc_root, int pid, sop_container *out)
{
    memset(out, 0, sizeof *out);
    char path[PATH_MAX], root[PATH_MAX];
    if (!fmt(path, sizeof path, "%s/%d/cgroup", proc_root ? proc_root : "/proc", pid))
        return SOP_EINVAL;
    char *text = NULL;
    size_t len = 0;
    if (sop__read_file_at(AT_FDCWD, path, CGROUP_FILE_MAX, &text, &len) < 0)
        return SOP_ENOTARGET;
    sop_container_cgroup cg;
    bool in = sop__container_from_cgroup(text, &cg);
    host_root(root, sizeof root);
    if (!in && sop__container_ctr_guess(text, &cg)) {
        /* a containerd task named by its namespace and id folders (ctr under cgroupfs) */
        struct stat st;
        in = fmt(path, sizeof path, "%s/run/containerd/io.containerd.runtime.v2.task/%s/%s", root,
                 cg.ctr_namespace, cg.id) &&
             stat(path, &st) == 0 && S_ISDIR(st.st_mode);
        if (in)
            fmt(cg.runtime, sizeof cg.runtime, "containerd");
    }
    free(text);
    if (!in)
        return 0;
    fmt(out->runtime, sizeof out->runtime, "%s", cg.runtime);
    fmt(out->id, sizeof out->id, "%s", cg.id);
    fmt(out->pod_uid, sizeof out->pod_uid, "%s", cg.pod_uid);
    names(root, cg.ctr_namespace, out);
    return 1;
}

int sop_container_of(int pid, sop_container *out)
{
    if (pid <= 0 || !out)
        return SOP_EINVAL;
    return sop__container_identify("/proc", pid, out);
}

#define SCAN_IDS_MAX 4096 /* distinct containers named once per scan */

typedef struct {
    sop_container c;
    bool match;
} scan_id;

static int cmp_pid(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

static bool matches(const sop_container *c, const char *container, const char *pod)
{
    if (pod) {
        const char *slash = strchr(pod, '/');
        return slash && c->pod[0] && strlen(c->pod_namespace) == (size_t)(slash - pod) &&
               strncmp(c->pod_namespace, pod, (size_t)(slash - pod)) == 0 &&
               strcmp(c->pod, slash + 1) == 0;
    }
    size_t n = strlen(container);
    return (c->name[0] && strcmp(c->name, container) == 0) ||
           (c->container[0] && strcmp(c->container, container) == 0) ||
           (n >= 12 && strncmp(c->id, container, n) == 0);
}

int sop_container_pids(const char *container, const char *pod, int *pids, size_t cap)
{
    if ((!container) == (!pod) || (container && !*container) || (pod && !strchr(pod, '/')) ||
        (!pids && cap))
        return SOP_EINVAL;
    DIR *d = opendir("/proc");
    if (!d)
        return SOP_EINVAL;
    scan_id *ids = NULL;
    size_t nids = 0, capids = 0;
    int found = 0;
    char root[PATH_MAX], path[64];
    host_root(root, sizeof root);
    for (struct dirent *e; (e = readdir(d));) {
        char *end;
        long pid = strtol(e->d_name, &end, 10);
        if (*end || pid <= 0 || pid > INT32_MAX)
            continue;
        fmt(path, sizeof path, "/proc/%ld/cgroup", pid);
        char *text = NULL;
        size_t len = 0;
        if (sop__read_file_at(AT_FDCWD, path, CGROUP_FILE_MAX, &text, &len) < 0)
            continue;
        sop_container_cgroup cg;
        bool in = sop__container_from_cgroup(text, &cg);
        free(text);
        if (!in)
            continue; /* a ctr container under cgroupfs is found by sop_container_of only */
        size_t i = 0;
        while (i < nids && strcmp(ids[i].c.id, cg.id) != 0)
            i++;
        if (i == nids) {
            if (nids == SCAN_IDS_MAX)
                continue;
            if (nids == capids) {
                size_t nc = capids ? capids * 2 : 16;
                scan_id *nv = realloc(ids, nc * sizeof *nv);
                if (!nv)
                    break;
                ids = nv;
                capids = nc;
            }
            sop_container *c = &ids[nids].c;
            memset(c, 0, sizeof *c);
            fmt(c->runtime, sizeof c->runtime, "%s", cg.runtime);
            fmt(c->id, sizeof c->id, "%s", cg.id);
            fmt(c->pod_uid, sizeof c->pod_uid, "%s", cg.pod_uid);
            names(root, cg.ctr_namespace, c);
            ids[nids].match = matches(c, container, pod);
            nids++;
        }
        if (ids[i].match) {
            if ((size_t)found < cap)
                pids[found] = (int)pid;
            found++;
        }
    }
    closedir(d);
    free(ids);
    if (found > 1) /* readdir's order is not pid order */
        qsort(pids, (size_t)found < cap ? (size_t)found : cap, sizeof *pids, cmp_pid);
    return found;
}

/* ---- the evidence group ---- */

static const sop_evk sop__evk_container[] = {
    SOP_EVK_S("runtime", sop_container, runtime,
              "podman, docker, containerd or cri-o: the runtime the cgroup path or the state file "
              "names"),
    SOP_EVK_T("id", sop_container, id, "the container's id (64 hex digits; a ctr id is a name)"),
    SOP_EVK_T("name", sop_container, name,
              "the runtime's name for it (podman's names[0], docker's Name, ctr's id)"),
    SOP_EVK_T("pod", sop_container, pod, "Kubernetes: the pod's name (CRI annotations or labels)"),
    SOP_EVK_T("namespace", sop_container, pod_namespace, "... the pod's namespace"),
    SOP_EVK_T("pod_uid", sop_container, pod_uid,
              "... the pod's UID (also from a kubepods cgroup path)"),
    SOP_EVK_T("container", sop_container, container, "... the container's name in the pod spec"),
    SOP_EVK_T("source", sop_container, source, "the state file the names were read from"),
};
static const size_t sop__evk_container_n = sizeof sop__evk_container / sizeof sop__evk_container[0];

static void *container_start(sop_collect_ctx *cx)
{
    sop_container *ct = calloc(1, sizeof *ct);
    if (ct && sop__container_identify(cx->proc_root, cx->pid, ct) != 1) {
        free(ct);
        return NULL;
    }
    return ct;
}

static void container_emit(const sop_collect_ctx *cx, void *p, sop_value *ev)
{
    (void)cx;
    sop_value *o = sop__v_obj();
    if (!o)
        return;
    sop__bridge_keys(o, p, sop__evk_container, sop__evk_container_n, "", NULL, NULL);
    sop__bridge_attach(ev, "container", o);
}

static const sop_evk_group container_groups[] = {
    {"container", "engine/collect/container_identity.c", sop__evk_container, &sop__evk_container_n},
    {0},
};

const sop_provider sop__provider_container = {
    .name = "container",
    .groups = container_groups,
    .start = container_start,
    .emit = container_emit,
    .free = free,
};
