/* test_container.c — a process's container from its cgroup path (probes/container.c) as each
 * runtime writes it, and its names from the runtime's state files (engine/collect/
 * container_identity.c) under a host root made in a temporary directory: podman's
 * containers.json and OCI config annotations, docker's config.v2.json, a containerd task's
 * config.json with Kubernetes' CRI annotations. Depends on probes/container.h,
 * container_identity.h, t.h. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "container.h"
#include "container_identity.h"
#include "t.h"

#define ID_A "8488e0c1d2f3a4b5c6d7e8f90123456789abcdef0123456789abcdef01234567"
#define ID_B "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
#define ID_C "cdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcd"
#define ID_D "abababababababababababababababababababababababababababababababab"
#define UID "5f1c2b8e-1a2b-4c3d-8e9f-0a1b2c3d4e5f"

static void parse(const char *text, bool want, const char *rt, const char *id, const char *uid)
{
    sop_container_cgroup c;
    bool got = sop__container_from_cgroup(text, &c);
    CHECK(got == want);
    if (!got || !want) {
        if (got != want)
            fprintf(stderr, "  for %s", text);
        return;
    }
    CHECK_EQ_S(c.runtime, rt);
    CHECK_EQ_S(c.id, id);
    CHECK_EQ_S(c.pod_uid, uid);
}

static void mkdirs(const char *path)
{
    char tmp[1024];
    snprintf(tmp, sizeof tmp, "%s", path);
    for (char *p = tmp + 1; *p; p++)
        if (*p == '/') {
            *p = '\0';
            mkdir(tmp, 0755);
            *p = '/';
        }
    mkdir(tmp, 0755);
}

static void put(const char *root, const char *rel, const char *text)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", root, rel);
    char dir[1024];
    snprintf(dir, sizeof dir, "%s", path);
    *strrchr(dir, '/') = '\0';
    mkdirs(dir);
    FILE *f = fopen(path, "w");
    if (!f) {
        perror(path);
        exit(1);
    }
    fputs(text, f);
    fclose(f);
}

int main(void)
{
    /* each runtime, systemd and cgroupfs drivers, cgroup v1 (many lines) and v2 (one) */
    parse("0::/machine.slice/libpod-" ID_A ".scope/container\n", true, "podman", ID_A, "");
    parse("12:pids:/libpod_parent/libpod-" ID_A "\n11:cpu,cpuacct:/libpod_parent/libpod-" ID_A "\n",
          true, "podman", ID_A, "");
    parse("0::/machine.slice/libpod-conmon-" ID_A ".scope\n", false, "", "", "");
    parse("0::/system.slice/docker-" ID_A ".scope\n", true, "docker", ID_A, "");
    parse("4:memory:/docker/" ID_A "\n", true, "docker", ID_A, "");
    parse("0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod"
          "5f1c2b8e_1a2b_4c3d_8e9f_0a1b2c3d4e5f.slice/cri-containerd-" ID_B ".scope\n",
          true, "containerd", ID_B, UID);
    parse("0::/kubepods/besteffort/pod" UID "/" ID_B "\n", true, "", ID_B, UID);
    parse("0::/kubepods.slice/kubepods-pod5f1c2b8e_1a2b_4c3d_8e9f_0a1b2c3d4e5f.slice/crio-" ID_B
          ".scope\n",
          true, "cri-o", ID_B, UID);
    parse("0::/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod5f1c2b8e_1a2b_4c3d_"
          "8e9f_0a1b2c3d4e5f.slice/crio-conmon-" ID_B ".scope\n",
          false, "", "", "");
    parse("0::/user.slice/user-0.slice/session-3.scope\n", false, "", "", "");
    parse("0::/\n", false, "", "", "");
    parse("", false, "", "", "");
    parse("garbage without colons\n::\n0:\n", false, "", "", "");
    /* the outermost id wins: a folder the container made below its own names nothing */
    parse("0::/system.slice/docker-" ID_A ".scope/docker-" ID_B ".scope\n", true, "docker", ID_A,
          "");
    /* not 64 hex digits: no id */
    parse("0::/system.slice/docker-" ID_A "0.scope\n", false, "", "", "");
    parse("0::/docker/8488E0C1D2F3A4B5C6D7E8F90123456789ABCDEF0123456789ABCDEF01234567\n", false,
          "", "", "");
    /* a truncated file: read as far as it goes */
    parse("0::/machine.slice/libpod-8488e0c1", false, "", "", "");

    sop_container_cgroup g;
    CHECK(sop__container_ctr_guess("0::/default/trainer-7\n", &g));
    CHECK_EQ_S(g.ctr_namespace, "default");
    CHECK_EQ_S(g.id, "trainer-7");
    CHECK(!sop__container_ctr_guess("0::/../x\n", &g));
    CHECK(!sop__container_ctr_guess("0::/only\n", &g));

    /* names from state files under a host root */
    char root[] = "/tmp/sop_container_XXXXXX";
    if (!mkdtemp(root))
        return 1;
    char proc[600], host[600];
    snprintf(proc, sizeof proc, "%s/proc", root);
    snprintf(host, sizeof host, "%s/host", root);
    setenv("SOP_HOST_ROOT", host, 1);
    put(proc, "10/cgroup", "0::/machine.slice/libpod-" ID_A ".scope/container\n");
    put(host, "var/lib/containers/storage/overlay-containers/containers.json",
        "[{\"id\":\"" ID_C "\",\"names\":[\"other\"]},{\"id\":\"" ID_A
        "\",\"names\":[\"trainer\"],\"image\":\"x\"}]");
    put(host, "run/containers/storage/overlay-containers/" ID_A "/userdata/config.json",
        "{\"ociVersion\":\"1.0.2\",\"annotations\":{\"io.kubernetes.cri.sandbox-name\":\"web-0\","
        "\"io.kubernetes.cri.sandbox-namespace\":\"serving\",\"io.kubernetes.cri.container-name\":"
        "\"server\",\"io.kubernetes.cri.sandbox-uid\":\"" UID "\"}}");
    sop_container c;
    CHECK_EQ_I(sop__container_identify(proc, 10, &c), 1);
    CHECK_EQ_S(c.runtime, "podman");
    CHECK_EQ_S(c.id, ID_A);
    CHECK_EQ_S(c.name, "trainer");
    CHECK_EQ_S(c.pod, "web-0");
    CHECK_EQ_S(c.pod_namespace, "serving");
    CHECK_EQ_S(c.container, "server");
    CHECK_EQ_S(c.pod_uid, UID);

    /* docker: Name and the kubelet's labels (cri-dockerd) */
    put(proc, "11/cgroup", "0::/system.slice/docker-" ID_B ".scope\n");
    put(host, "var/lib/docker/containers/" ID_B "/config.v2.json",
        "{\"Name\":\"/vllm\",\"Config\":{\"Labels\":{\"io.kubernetes.pod.name\":\"llm-1\","
        "\"io.kubernetes.pod.namespace\":\"inference\",\"io.kubernetes.container.name\":"
        "\"vllm\"}}}");
    CHECK_EQ_I(sop__container_identify(proc, 11, &c), 1);
    CHECK_EQ_S(c.runtime, "docker");
    CHECK_EQ_S(c.name, "vllm");
    CHECK_EQ_S(c.pod, "llm-1");
    CHECK_EQ_S(c.pod_namespace, "inference");
    CHECK_EQ_S(c.container, "vllm");

    /* a kubepods path with a bare id: the runtime is the one whose state holds it */
    put(proc, "12/cgroup", "0::/kubepods/burstable/pod" UID "/" ID_B "\n");
    CHECK_EQ_I(sop__container_identify(proc, 12, &c), 1);
    CHECK_EQ_S(c.runtime, "docker"); /* its config.v2.json above */
    put(proc, "13/cgroup", "0::/kubepods/burstable/pod" UID "/" ID_D "\n");
    put(host, "run/containerd/io.containerd.runtime.v2.task/k8s.io/" ID_D "/config.json",
        "{\"annotations\":{\"io.kubernetes.cri.sandbox-name\":\"job-3\","
        "\"io.kubernetes.cri.sandbox-namespace\":\"train\",\"io.kubernetes.cri.container-name\":"
        "\"torchrun\"}}");
    CHECK_EQ_I(sop__container_identify(proc, 13, &c), 1);
    CHECK_EQ_S(c.runtime, "containerd");
    CHECK_EQ_S(c.pod, "job-3");
    CHECK_EQ_S(c.container, "torchrun");
    CHECK_EQ_S(c.pod_uid, UID);

    /* ctr under cgroupfs: /NAMESPACE/ID, known by its task folder */
    put(proc, "14/cgroup", "0::/default/trainer-7\n");
    put(host, "run/containerd/io.containerd.runtime.v2.task/default/trainer-7/config.json",
        "{\"ociVersion\":\"1.1.0\"}");
    CHECK_EQ_I(sop__container_identify(proc, 14, &c), 1);
    CHECK_EQ_S(c.runtime, "containerd");
    CHECK_EQ_S(c.name, "trainer-7");
    put(proc, "15/cgroup", "0::/default/not-a-task\n");
    CHECK_EQ_I(sop__container_identify(proc, 15, &c), 0);

    /* broken state files: the id stays, no names; a missing cgroup file: not there */
    put(proc, "16/cgroup", "0::/system.slice/docker-" ID_A ".scope\n");
    put(host, "var/lib/docker/containers/" ID_A "/config.v2.json", "{\"Name\":");
    CHECK_EQ_I(sop__container_identify(proc, 16, &c), 1);
    CHECK_EQ_S(c.id, ID_A);
    CHECK_EQ_S(c.name, "");
    CHECK_EQ_I(sop__container_identify(proc, 99, &c), SOP_ENOTARGET);

    char cmd[700];
    snprintf(cmd, sizeof cmd, "rm -rf %s", root);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", root);
    return t_done();
}
