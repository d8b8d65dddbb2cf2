/* container.c — a process's container from its cgroup path (container.h). What each runtime
 * writes there, under systemd and under cgroupfs drivers:
 *   podman      .../libpod-<id>.scope, /libpod_parent/libpod-<id>   (libpod-conmon-<id>: conmon)
 *   docker      .../docker-<id>.scope, /docker/<id>
 *   containerd  .../cri-containerd-<id>.scope, /kubepods/.../pod<uid>/<id>, /<namespace>/<id>
 *   CRI-O       .../crio-<id>.scope                                   (crio-conmon-<id>: conmon)
 * and Kubernetes' pod folder: kubepods-<qos>-pod<uid with _>.slice or pod<uid>. Depends on libc. */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "container.h"

static bool is_hex64(const char *s, size_t n)
{
    if (n != 64)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
            return false;
    return true;
}

static bool starts(const char *s, size_t n, const char *prefix)
{
    size_t k = strlen(prefix);
    return n >= k && memcmp(s, prefix, k) == 0;
}

/* n without a systemd unit suffix */
static size_t unit_stem(const char *s, size_t n)
{
    static const char *const sfx[] = {".scope", ".slice"};
    for (size_t i = 0; i < sizeof sfx / sizeof sfx[0]; i++) {
        size_t k = strlen(sfx[i]);
        if (n > k && memcmp(s + n - k, sfx[i], k) == 0)
            return n - k;
    }
    return n;
}

static void copy(char *dst, size_t cap, const char *s, size_t n)
{
    if (n >= cap)
        n = cap - 1;
    memcpy(dst, s, n);
    dst[n] = '\0';
}

/* A pod folder: "pod" + 36 characters of hex and '-' or '_' (systemd spells '-' as '_'), maybe
 * after "kubepods-<qos>-". */
static bool pod_uid(const char *s, size_t n, char *out, size_t cap)
{
    for (size_t i = 0; i + 3 + 36 <= n; i++) {
        if (memcmp(s + i, "pod", 3) != 0 || (i > 0 && s[i - 1] != '-'))
            continue;
        const char *u = s + i + 3;
        size_t k = n - i - 3;
        if (k != 36)
            continue;
        bool ok = true;
        for (size_t j = 0; j < 36 && ok; j++)
            ok = (u[j] >= '0' && u[j] <= '9') || (u[j] >= 'a' && u[j] <= 'f') || u[j] == '-' ||
                 u[j] == '_';
        if (!ok)
            continue;
        copy(out, cap, u, 36);
        for (char *c = out; *c; c++)
            if (*c == '_')
                *c = '-';
        return true;
    }
    return false;
}

typedef struct {
    const char *prefix, *runtime;
} scope_kind;

static const scope_kind scopes[] = {
    {"libpod-conmon-", NULL},
    {"crio-conmon-", NULL},
    {"libpod-", "podman"},
    {"docker-", "docker"},
    {"cri-containerd-", "containerd"},
    {"crio-", "cri-o"},
};

/* One cgroup path (not NUL-terminated: [p, end)). */
static bool from_path(const char *p, const char *end, sop_container_cgroup *out)
{
    bool found = false;
    const char *parent = NULL;
    size_t parent_n = 0;
    while (p < end) {
        while (p < end && *p == '/')
            p++;
        const char *c = p;
        while (p < end && *p != '/')
            p++;
        size_t n = (size_t)(p - c);
        if (!n)
            break;
        size_t stem = unit_stem(c, n);
        if (found) /* the outermost id: folders below it are the container's own to make */
            break;
        pod_uid(c, stem, out->pod_uid, sizeof out->pod_uid);
        bool matched = false;
        for (size_t i = 0; i < sizeof scopes / sizeof scopes[0] && !matched; i++) {
            if (!starts(c, stem, scopes[i].prefix))
                continue;
            matched = true;
            size_t k = strlen(scopes[i].prefix);
            if (scopes[i].runtime && is_hex64(c + k, stem - k)) {
                copy(out->id, sizeof out->id, c + k, stem - k);
                copy(out->runtime, sizeof out->runtime, scopes[i].runtime,
                     strlen(scopes[i].runtime));
                found = true;
            }
        }
        if (!matched && is_hex64(c, stem)) {
            copy(out->id, sizeof out->id, c, stem);
            const char *rt =
                parent && parent_n == 6 && memcmp(parent, "docker", 6) == 0 ? "docker" : "";
            copy(out->runtime, sizeof out->runtime, rt, strlen(rt));
            found = true;
        }
        parent = c;
        parent_n = n;
    }
    return found;
}

/* Each line's path: "hierarchy:controllers:/path". */
static const char *line_path(const char *line, const char *eol)
{
    const char *c1 = memchr(line, ':', (size_t)(eol - line));
    const char *c2 = c1 ? memchr(c1 + 1, ':', (size_t)(eol - c1 - 1)) : NULL;
    return c2 ? c2 + 1 : NULL;
}

bool sop__container_from_cgroup(const char *text, sop_container_cgroup *out)
{
    memset(out, 0, sizeof *out);
    for (const char *line = text; line && *line;) {
        const char *eol = strchr(line, '\n');
        if (!eol)
            eol = line + strlen(line);
        const char *path = line_path(line, eol);
        sop_container_cgroup one;
        memset(&one, 0, sizeof one);
        if (path && from_path(path, eol, &one)) {
            *out = one;
            return true;
        }
        if (path && !out->pod_uid[0] && one.pod_uid[0])
            memcpy(out->pod_uid, one.pod_uid, sizeof out->pod_uid);
        line = *eol ? eol + 1 : NULL;
    }
    return false;
}

static bool printable_name(const char *s, size_t n)
{
    if (!n || n >= SOP_CONTAINER_ID_MAX || (n == 1 && s[0] == '.') ||
        (n == 2 && s[0] == '.' && s[1] == '.'))
        return false;
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)s[i];
        if (!((ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
              ch == '-' || ch == '_' || ch == '.'))
            return false;
    }
    return true;
}

bool sop__container_ctr_guess(const char *text, sop_container_cgroup *out)
{
    memset(out, 0, sizeof *out);
    for (const char *line = text; line && *line;) {
        const char *eol = strchr(line, '\n');
        if (!eol)
            eol = line + strlen(line);
        const char *path = line_path(line, eol);
        /* the last two folders of the first path with at least two */
        const char *a = NULL, *b = NULL, *b_end = eol;
        for (const char *p = path; p && p < eol; p++)
            if (*p == '/' && p + 1 < eol) {
                a = b;
                b = p + 1;
            }
        if (a && b && a < b) {
            size_t an = (size_t)(b - 1 - a), bn = (size_t)(b_end - b);
            if (printable_name(a, an) && printable_name(b, bn) && an < sizeof out->ctr_namespace) {
                copy(out->ctr_namespace, sizeof out->ctr_namespace, a, an);
                copy(out->id, sizeof out->id, b, bn);
                return true;
            }
        }
        line = *eol ? eol + 1 : NULL;
    }
    return false;
}
