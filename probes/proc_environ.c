/* proc_environ.c — keep only the allow-listed tuning variables of /proc/PID/environ (thread
 * pools, allocators, Python runtime switches, device/rank layout). Every other name is
 * dropped with its value, so tokens and passwords never leave the target. Depends on libc. */
#include <errno.h>
#include <string.h>

#include "proc.h"

/* Exact names. Tuning knobs only; nothing that names a credential, host or path to data. */
static const char *const env_exact[] = {
    /* thread pools */
    "OMP_NUM_THREADS",
    "OMP_PROC_BIND",
    "OMP_PLACES",
    "OMP_DYNAMIC",
    "OMP_WAIT_POLICY",
    "OMP_SCHEDULE",
    "OMP_THREAD_LIMIT",
    "OMP_MAX_ACTIVE_LEVELS",
    "OMP_STACKSIZE",
    "GOMP_SPINCOUNT",
    "GOMP_CPU_AFFINITY",
    "MKL_NUM_THREADS",
    "MKL_DYNAMIC",
    "MKL_THREADING_LAYER",
    "OPENBLAS_NUM_THREADS",
    "VECLIB_MAXIMUM_THREADS",
    "NUMEXPR_NUM_THREADS",
    "NUMEXPR_MAX_THREADS",
    "BLIS_NUM_THREADS",
    "GOTO_NUM_THREADS",
    "TOKENIZERS_PARALLELISM",
    "RAYON_NUM_THREADS",
    "UV_THREADPOOL_SIZE",
    "TF_NUM_INTRAOP_THREADS",
    "TF_NUM_INTEROP_THREADS",
    /* allocators */
    "LD_PRELOAD",
    "MALLOC_ARENA_MAX",
    "MALLOC_MMAP_THRESHOLD_",
    "MALLOC_TRIM_THRESHOLD_",
    "MALLOC_TOP_PAD_",
    "MALLOC_MMAP_MAX_",
    "MALLOC_CONF",
    "JE_MALLOC_CONF",
    "_RJEM_MALLOC_CONF",
    "GLIBC_TUNABLES",
    "PYTHONMALLOC",
    /* Python runtime switches */
    "PYTHONASYNCIODEBUG",
    "PYTHONDEVMODE",
    "PYTHONUNBUFFERED",
    "PYTHONFAULTHANDLER",
    "PYTHONTRACEMALLOC",
    "PYTHONMALLOCSTATS",
    "PYTHONOPTIMIZE",
    "PYTHONDONTWRITEBYTECODE",
    "PYTHONPROFILEIMPORTTIME",
    "PYTHONPERFSUPPORT",
    "PYTHON_GIL",
    "PYTHONWARNINGS",
    /* devices and ranks */
    "CUDA_VISIBLE_DEVICES",
    "CUDA_LAUNCH_BLOCKING",
    "CUDA_DEVICE_MAX_CONNECTIONS",
    "WORLD_SIZE",
    "RANK",
    "LOCAL_RANK",
    "LOCAL_WORLD_SIZE",
    "GROUP_RANK",
    "TORCHELASTIC_RUN_ID",
    /* the Slurm job and task a rank belongs to (engine/bridge/rank_identity.c) */
    "SLURM_JOB_ID",
    "SLURM_STEP_ID",
    "SLURM_PROCID",
    "SLURM_LOCALID",
    "SLURM_NTASKS",
};

/* Prefixes whose whole family is runtime tuning (Intel OpenMP, tcmalloc, mimalloc). */
static const char *const env_prefix[] = {"KMP_", "TCMALLOC_", "MIMALLOC_"};

bool sop__env_allowed(const char *name)
{
    if (!name || !*name)
        return false;
    for (size_t i = 0; i < sizeof env_exact / sizeof env_exact[0]; i++)
        if (env_exact[i][0] == name[0] && strcmp(name, env_exact[i]) == 0) /* (a call less) */
            return true;
    for (size_t i = 0; i < sizeof env_prefix / sizeof env_prefix[0]; i++) {
        size_t n = strlen(env_prefix[i]);
        if (strncmp(name, env_prefix[i], n) == 0 && name[n])
            return true;
    }
    /* PYTORCH_CUDA_ALLOC_CONF, PYTORCH_HIP_ALLOC_CONF, PYTORCH_ALLOC_CONF */
    size_t len = strlen(name);
    if (strncmp(name, "PYTORCH_", 8) == 0 && len >= 18 &&
        strcmp(name + len - 10, "ALLOC_CONF") == 0)
        return true;
    return false;
}

/* The next NAME=value entry of environ text from *off: its name (into name[cap]), value and
 * value length. Entries without '=' or with a name too long for `name` are skipped; a cut-off
 * last entry (no NUL: its value may be partial) ends the text. False at the end. */
static bool next_entry(const char *buf, size_t len, size_t *off, char *name, size_t cap,
                       const char **val, size_t *vlen)
{
    while (*off < len) {
        const char *entry = buf + *off;
        const char *nul = memchr(entry, '\0', len - *off);
        if (!nul)
            return false;
        size_t elen = (size_t)(nul - entry);
        *off += elen + 1;
        const char *eq = memchr(entry, '=', elen);
        size_t nlen = eq ? (size_t)(eq - entry) : 0;
        if (nlen == 0 || nlen >= cap)
            continue;
        memcpy(name, entry, nlen);
        name[nlen] = '\0';
        *val = eq + 1;
        *vlen = elen - nlen - 1;
        return true;
    }
    return false;
}

int sop__parse_environ(const char *buf, size_t len, sop_env *out)
{
    out->n = 0;
    if (!buf)
        return -EINVAL;
    size_t off = 0, vlen = 0;
    const char *val = NULL;
    char name[sizeof out->vars[0].name];
    while (out->n < SOP_ENV_MAX && next_entry(buf, len, &off, name, sizeof name, &val, &vlen)) {
        if (!sop__env_allowed(name))
            continue;
        bool dup = false; /* the first definition is the one getenv() sees */
        for (size_t i = 0; i < out->n && !dup; i++)
            dup = strcmp(out->vars[i].name, name) == 0;
        if (dup)
            continue;
        sop_env_var *v = &out->vars[out->n++];
        memcpy(v->name, name, strlen(name) + 1);
        if (vlen >= sizeof v->value)
            vlen = sizeof v->value - 1;
        memcpy(v->value, val, vlen);
        v->value[vlen] = '\0';
    }
    return 0;
}

bool sop__environ_get(const char *buf, size_t len, const char *want, char *out, size_t cap)
{
    if (cap)
        out[0] = '\0';
    if (!buf || !cap || !sop__env_allowed(want))
        return false;
    size_t off = 0, vlen = 0;
    const char *val = NULL;
    char name[sizeof((sop_env_var *)0)->name];
    while (next_entry(buf, len, &off, name, sizeof name, &val, &vlen))
        if (strcmp(name, want) == 0) { /* the first definition is the one getenv() sees */
            if (vlen >= cap)
                vlen = cap - 1;
            memcpy(out, val, vlen);
            out[vlen] = '\0';
            return true;
        }
    return false;
}
