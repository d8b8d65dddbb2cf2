/* rules.h — the rule runner: one sandboxed Lua 5.4 state that loads a rule pack and runs each
 * rule over the evidence tree under instruction and memory limits. The runner's three parts
 * (engine/rules/rules.c, rules_sandbox.c, rules_dsl.c, sharing rules_int.h) and
 * engine/rules/lua_value.c are the only files that include Lua's headers. */
#ifndef SOP_RULES_H
#define SOP_RULES_H

#include <stddef.h>

#include "value.h"

typedef struct sop_rules sop_rules;

/* A source the `require` of a rule pack can resolve without touching the file system:
 * name "plugins.mem" → source text. The embedded default pack is such a list. */
typedef struct {
    const char *name;
    const char *source;
} sop_rules_module;

/* The bytecode compiled at build time from an embedded module's text (`source` is the very
 * pointer of a sop__embedded_modules entry), or NULL (another text, a cross build, a module
 * that did not compile): then the text is parsed. Generated with the embedded pack. */
const unsigned char *sop__embedded_code(const char *source, size_t *len);

/* Create a runner (no rules yet). Returns 0 or SOP_ENOMEM. */
int sop__rules_new(sop_rules **out);
void sop__rules_free(sop_rules *r);

/* Load a pack, replacing what was loaded. `chunkname` is the file name shown in errors;
 * `search_dir` (may be NULL) is where `require "plugins.x"` finds plugins/x.lua; `modules`
 * (may be NULL, terminated by a {NULL,NULL} entry) are tried first. Text chunks only.
 * On error returns SOP_ERULES with "file:line: message" in err (SOP_EUNKNOWNKEY / SOP_EINVAL
 * when a kept threshold override does not fit the new pack) and no pack is loaded. */
int sop__rules_load(sop_rules *r, const char *chunkname, const char *src, size_t len,
                    const char *search_dir, const sop_rules_module *modules, char *err,
                    size_t errlen);

/* Load a pack (as sop__rules_load) and then, when site_src is not NULL, a site file over it:
 * the site runs in the same sandbox with the DSL of a pack plus `disable "id"` /
 * `disable {"a", "b"}`; its `thresholds{}` replace defaults or declare new ones, its `rule{}`
 * adds rules after the pack's. Its `require` looks in site_dir (may be NULL). Overrides are
 * checked after the site ran. On any error no pack is loaded; err holds "file:line: message". */
int sop__rules_load_site(sop_rules *r, const char *chunkname, const char *src, size_t len,
                         const char *search_dir, const sop_rules_module *modules,
                         const char *site_name, const char *site_src, size_t site_len,
                         const char *site_dir, char *err, size_t errlen);

/* Per-rule limits (also applied to the top-level run of a pack at load): instructions executed
 * and bytes allocated while one rule runs; pcall and coroutines inside the rule cannot escape
 * them. 0 picks the default. The whole Lua state is capped at 4 * max_bytes + 16 MiB.
 * Returns 0 or SOP_EINVAL. */
#define SOP_RULES_DEFAULT_INSTRUCTIONS 10000000LL
#define SOP_RULES_DEFAULT_BYTES ((size_t)64 << 20)
int sop__rules_set_limits(sop_rules *r, long long max_instructions, size_t max_bytes);

/* The watchdog, the last line behind the instruction and memory limits: wall-clock limits per
 * rule (and per top-level run of a pack or site file) and per evaluation (sop__rules_run),
 * checked with the instruction count. A rule past its limit is killed ("time limit exceeded");
 * once the evaluation's is spent, the running rule is killed and the rules left are reported
 * as not run. 0 picks the default. Returns 0 or SOP_EINVAL. */
#define SOP_RULES_DEFAULT_RULE_MS 10000L
#define SOP_RULES_DEFAULT_EVAL_MS 60000L
int sop__rules_set_time_limits(sop_rules *r, long rule_ms, long eval_ms);

/* The `reads` check, on by default (sop__rules_new) for every pack, site files included: each
 * run records the evidence paths a rule reads through `ev` ("proc.rss_kb",
 * "python.threads[].window"; an array's elements are "[]"; taking a table's length or
 * iterating it reads the table), and a rule that declares `reads` and read a path none of them
 * covers becomes a rule_errors entry instead of its verdict. A declared path covers itself, the
 * tables on the way to it and everything below it. A rule without `reads` is not checked.
 * Turning it off (on = 0) is for tests; neither the public API nor sopctl offers it. */
void sop__rules_set_check_reads(sop_rules *r, int on);

/* Drop every threshold override. */
void sop__rules_clear_thresholds(sop_rules *r);

size_t sop__rules_count(const sop_rules *r);
const char *sop__rules_id(const sop_rules *r, size_t i);

/* Override threshold `key` of the pack in force (SOP_ENORULES when none is loaded). The value
 * is read with the type of the pack's default: a number (SOP_EINVAL when it does not parse as
 * one), true/false, or the string as given; SOP_EUNKNOWNKEY when the pack has no such
 * threshold, with "unknown threshold 'x' (known: a, b)" in err. Kept across loads and
 * re-applied to each; one the newly loaded pack does not declare (or whose value does not fit
 * its type) is dropped at that load, which does not fail for it. */
int sop__rules_set_threshold(sop_rules *r, const char *key, const char *value, char *err,
                             size_t errlen);

/* Run every rule over `ev`. *out becomes an object:
 *   { findings = [ {id, section, severity, symptom, evidence, cause, fix, verify, refs=[...]} ],
 *     cleared  = [ {id, section, note} ],
 *     unknown  = [ {id, section, reason} ],
 *     rule_errors = [ {id, where, message} ],
 *     thresholds = { key = value } }
 * Text fields are either strings or objects {en = "...", zh = "..."}: the renderer picks.
 * Findings are ordered high, warn, info (pack order within each). Rules see `ev` and `th` as
 * read-only views (writes raise); `th.x` for an undeclared name raises. Each rule runs under
 * the limits of sop__rules_set_limits; a rule that exceeds them, raises, or returns no verdict
 * (or a hit without evidence or refs) becomes a rule_errors entry and the next rule runs.
 * Returns 0, or SOP_ENORULES / SOP_ENOMEM. */
/* Describe the loaded pack for generated docs: {rules = [{id section severity where title reads
 * uses}], thresholds = {name = default}}. Returns 0, SOP_EINVAL (nothing loaded), SOP_ENOMEM. */
int sop__rules_describe(sop_rules *r, sop_value **out);

int sop__rules_run(sop_rules *r, const sop_value *ev, sop_value **out, char *err, size_t errlen);

/* When running as root: 0 when the file (its fstat) is owned by root and not writable by group
 * or others, else -1 with the reason in why. Always 0 for other users. (engine/rules/trust.c) */
struct stat;
int sop__rules_file_trusted(const struct stat *st, char *why, size_t whylen);

/* Open the plugin `rel` ("plugins/x.lua") under `dir`, the rules file's directory, for
 * reading: each step below `dir` is opened without following a symbolic link, and each
 * directory on the way and the file itself (their fstat) must pass the test above and be a
 * directory / a regular file. Returns the fd (the caller closes it); -ENOENT when a step is not
 * there (the built-in module is used); another -errno with "<path> <reason>" in why, naming
 * the step that failed and never quoting a file's content. (engine/rules/trust.c) */
int sop__rules_open_plugin(const char *dir, const char *rel, char *why, size_t whylen);

#endif
