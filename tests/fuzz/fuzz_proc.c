/* fuzz_proc.c — libFuzzer target: every /proc text parser (stat, status, smaps_rollup, io,
 * limits, schedstat, environ, cmdline, maps, mapped files from maps/smaps) fed the same
 * arbitrary bytes.
 * Depends on probes/proc.h. */
#include "fuzz.h"
#include "proc.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *s = fuzz_cstr(data, size);
    sop_stat st;
    sop_status stt;
    sop_smaps sm;
    sop_io io;
    sop_limits lim;
    sop_schedstat ss;
    (void)sop__parse_stat(s, &st);
    (void)sop__parse_status(s, &stt);
    (void)sop__parse_smaps_rollup(s, &sm);
    (void)sop__parse_io(s, &io);
    (void)sop__parse_limits(s, &lim);
    (void)sop__parse_schedstat(s, &ss);
    free(s);
    /* environ and cmdline are NUL-separated: exact length, no terminator added. */
    uint8_t *raw = malloc(size ? size : 1);
    if (!raw)
        abort();
    memcpy(raw, data, size);
    sop_env *env = malloc(sizeof *env);
    if (!env)
        abort();
    (void)sop__parse_environ((const char *)raw, size, env);
    for (size_t i = 0; i < env->n && i < SOP_ENV_MAX; i++)
        if (!sop__env_allowed(env->vars[i].name))
            abort(); /* only allow-listed names may come out */
    char line[512];
    (void)sop__parse_cmdline((const char *)raw, size, line, sizeof line);
    if (memchr(line, '\0', sizeof line) == NULL)
        abort();
    (void)sop__parse_cmdline((const char *)raw, size, line, 1);
    free(env);
    free(raw);
    char *m = fuzz_cstr(data, size);
    sop_libs *libs = malloc(sizeof *libs);
    if (!libs)
        abort();
    (void)sop__parse_maps(m, libs);
    free(libs);
    sop_mapped *mp = malloc(sizeof *mp);
    if (!mp)
        abort();
    if (sop__parse_mapped(m, mp) == 0) {
        if (mp->n > SOP_MAPPED_MAX || (int64_t)mp->n > mp->files_total)
            abort(); /* bounded, and never more kept than seen */
        for (size_t i = 0; i < mp->n; i++)
            if (!memchr(mp->files[i].path, '\0', sizeof mp->files[i].path))
                abort();
    }
    free(mp);
    free(m);
    return 0;
}
