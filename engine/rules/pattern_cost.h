/* pattern_cost.h — an upper bound on the work Lua 5.4's pattern matcher (lstrlib) can do for
 * one string.find/match/gmatch/gsub call, computed from the pattern and the subject before the
 * call runs, so the rule runner can refuse or charge it. Pure functions; depends on libc. */
#ifndef SOP_PATTERN_COST_H
#define SOP_PATTERN_COST_H

#include <stddef.h>

/* Pattern calls in rule code are refused above this many estimated steps. On the 2-core dev VM
 * the costliest subject allowed for each pattern shape takes at most ~0.2 s (test_rules
 * "pattern worst case" measures it; docs/rule-runner.md). */
#define SOP_PATTERN_BUDGET_STEPS 5e7

enum { SOP_PAT_FIND, SOP_PAT_MATCH, SOP_PAT_GMATCH, SOP_PAT_GSUB };

typedef struct {
    double steps;  /* estimated matcher steps (the guard's own scans included) */
    int unbounded; /* '*', '+', '-' quantifiers in the pattern */
    int plain;     /* find ran as a plain substring search (plain=true or no specials) */
    int over;      /* steps exceeded the budget (estimation stopped early) */
} sop_pat_cost;

/* Estimate the cost of calling `kind` with subject s[0..n) (already cut at init) and pattern
 * p[0..m). `plain` is string.find's 4th argument; `per_start` is what the caller adds at
 * each start position (gsub's replacement: sop__pattern_gsub_per_start). Once the estimate passes
 * `budget` (out->over = 1) no more subject scans are made, so the estimate itself costs O(m) plus
 * at most about `budget` steps. A malformed pattern is estimated up to where lstrlib raises. */
void sop__pattern_cost(int kind, const char *s, size_t n, const char *p, size_t m, int plain,
                       double per_start, double budget, sop_pat_cost *out);

/* gsub's work per match on top of the matcher: ~8 steps to copy and push, plus the replacement
 * string's length when it is a string (each '%1' in it is a copy even when the capture is
 * empty); repl_len < 0 for a function or table replacement. */
double sop__pattern_gsub_per_start(long long repl_len);

/* Does byte c belong to the single-character class at p[0..len) ('.', "%a", "[^%d/]", 'x'),
 * read as lstrlib reads it? Exposed for the tests, which compare it with the real matcher. */
int sop__pattern_class_has(const char *p, size_t len, unsigned char c);

#endif
