/* pattern_cost.c — an upper bound on the steps Lua 5.4's pattern matcher can take for one call,
 * read from the pattern and the subject before the call runs (see pattern_cost.h and
 * docs/rule-runner.md "Pattern calls"). Pure; depends on libc (ctype, like lstrlib). */
#include "pattern_cost.h"

#include <ctype.h>
#include <string.h>

/* The matcher tries the pattern at each start position (one when anchored with '^'), walking
 * the items left to right and backtracking at quantifiers. With item i costing a_i steps each
 * time it is reached and offering b_i ways to go on, one start costs at most
 *     C = a_0 + b_0 (a_1 + b_1 (a_2 + ... (a_last + b_last)))
 * where, for an item whose class text is `len` bytes long (a set is tested byte by byte):
 *   plain class  a = len             b = 1
 *   x?           a = 8 len           b = 2   (each try is a recursive call)
 *   x* x+ x-     a = (run+1) len     b = run + 1
 *                (run: the longest stretch of subject bytes in the class — no expansion can
 *                 be longer, wherever it starts)
 *   %bxy, %1-%9  a = n + 1           b = 1   (scan / compare up to the end of the subject)
 *   ( ) () $     a = 1               b = 1
 * The whole call: starts * (C + per_start), with starts = n + 1 for find/match, 2 (n + 1) for
 * gmatch/gsub (an empty match is tried twice at one position), 1 when anchored; plus the estimate's
 * own work (m for reading the pattern, 256 len + n for each quantified class). A plain find
 * (lmemfind) costs n/16 + (n - m + 1)(4 + m/16): memchr, then a memcmp per candidate.
 * Measured on the dev VM (test_rules prints it): one step is 0.01-4 ns for the costliest
 * subjects of each shape, so 5e7 steps stay below ~0.2 s even on a loaded machine. */

static int class_test(unsigned char c, unsigned char cl)
{
    int res;
    switch (tolower(cl)) {
    case 'a':
        res = isalpha(c);
        break;
    case 'c':
        res = iscntrl(c);
        break;
    case 'd':
        res = isdigit(c);
        break;
    case 'g':
        res = isgraph(c);
        break;
    case 'l':
        res = islower(c);
        break;
    case 'p':
        res = ispunct(c);
        break;
    case 's':
        res = isspace(c);
        break;
    case 'u':
        res = isupper(c);
        break;
    case 'w':
        res = isalnum(c);
        break;
    case 'x':
        res = isxdigit(c);
        break;
    case 'z':
        res = c == 0;
        break; /* deprecated, still in 5.4 */
    default:
        return cl == c; /* '%.' and friends: the character itself */
    }
    if (isupper(cl))
        res = !res;
    return res != 0;
}

/* A set "[...]" at p[0..len), p[len-1] == ']'. */
static int set_test(const char *p, size_t len, unsigned char c)
{
    size_t i = 0, ec = len - 1;
    int sig = 1;
    if (i + 1 < ec && p[i + 1] == '^') {
        sig = 0;
        i++;
    }
    while (++i < ec) {
        if (p[i] == '%') {
            i++;
            if (class_test(c, (unsigned char)p[i]))
                return sig;
        } else if (i + 2 < ec && p[i + 1] == '-') {
            i += 2;
            if ((unsigned char)p[i - 2] <= c && c <= (unsigned char)p[i])
                return sig;
        } else if ((unsigned char)p[i] == c) {
            return sig;
        }
    }
    return !sig;
}

int sop__pattern_class_has(const char *p, size_t len, unsigned char c)
{
    if (len == 0)
        return 0;
    if (p[0] == '.' && len == 1)
        return 1;
    if (p[0] == '%' && len == 2)
        return class_test(c, (unsigned char)p[1]);
    if (p[0] == '[' && len >= 3)
        return set_test(p, len, c);
    return (unsigned char)p[0] == c;
}

/* End (exclusive) of the single-character class starting at p[i], or 0 when lstrlib would
 * call the pattern malformed. */
static size_t class_end(const char *p, size_t m, size_t i)
{
    if (p[i] == '%')
        return i + 1 < m ? i + 2 : 0;
    if (p[i] == '[') {
        size_t j = i + 1;
        if (j < m && p[j] == '^')
            j++;
        do {
            if (j >= m)
                return 0;
            if (p[j++] == '%' && j < m)
                j++;
        } while (j >= m || p[j] != ']');
        return j + 1;
    }
    return i + 1;
}

/* The longest run of subject bytes in the class p[0..len). */
static size_t longest_run(const char *s, size_t n, const char *p, size_t len)
{
    unsigned char in[256];
    for (int c = 0; c < 256; c++)
        in[c] = (unsigned char)sop__pattern_class_has(p, len, (unsigned char)c);
    size_t best = 0, cur = 0;
    for (size_t i = 0; i < n; i++) {
        cur = in[(unsigned char)s[i]] ? cur + 1 : 0;
        if (cur > best)
            best = cur;
    }
    return best;
}

double sop__pattern_gsub_per_start(long long repl_len)
{
    return 8.0 + (repl_len > 0 ? (double)repl_len : 0);
}

void sop__pattern_cost(int kind, const char *s, size_t n, const char *p, size_t m, int plain,
                       double per_start, double budget, sop_pat_cost *out)
{
    memset(out, 0, sizeof *out);
    double dn = (double)n;
    if (kind == SOP_PAT_FIND && (plain || strcspn(p, "^$*+?.([%-") >= m)) {
        /* lmemfind: memchr for the first byte, memcmp for the rest, at each candidate. */
        out->plain = 1;
        double cands = m > n ? 0 : dn - (double)m + 1;
        out->steps = dn / 16 + cands * (4 + (double)m / 16);
        out->over = out->steps > budget;
        return;
    }
    size_t i = 0;
    int anchored = 0;
    if (kind != SOP_PAT_GMATCH && m > 0 && p[0] == '^') {
        anchored = 1;
        i = 1;
    }
    double starts = anchored                                         ? 1
                    : kind == SOP_PAT_GMATCH || kind == SOP_PAT_GSUB ? 2 * (dn + 1)
                                                                     : dn + 1;
    double guard = (double)m, sum = per_start, mult = 1;
    while (i < m) {
        double a = 1, b = 1;
        char c = p[i];
        if (c == '(') {
            i += i + 1 < m && p[i + 1] == ')' ? 2 : 1;
        } else if (c == ')') {
            i++;
        } else if (c == '$' && i + 1 == m) {
            i++;
        } else if (c == '%' && i + 1 < m && p[i + 1] == 'b') {
            if (i + 3 >= m)
                break; /* "missing arguments to '%b'": the matcher raises here */
            a = dn + 1;
            out->unbounded++;
            i += 4;
        } else if (c == '%' && i + 1 < m && p[i + 1] == 'f') {
            size_t e = i + 2 < m && p[i + 2] == '[' ? class_end(p, m, i + 2) : 0;
            if (!e)
                break;
            a = 2 * (double)(e - i);
            i = e;
        } else if (c == '%' && i + 1 < m && isdigit((unsigned char)p[i + 1])) {
            a = dn + 1;
            i += 2;
        } else {
            size_t e = class_end(p, m, i);
            if (!e)
                break;
            size_t len = e - i;
            char q = e < m ? p[e] : '\0';
            if (e < m && (q == '*' || q == '+' || q == '-')) {
                out->unbounded++;
                guard += 256.0 * (double)len + dn;
                if (guard + starts * (sum + mult) > budget)
                    out->over = 1;
                /* Once over, keep reading only to count the quantifiers for the message. */
                double run = out->over ? dn : (double)longest_run(s, n, p + i, len);
                a = (run + 1) * (double)len;
                b = run + 1;
                e++;
            } else if (e < m && q == '?') {
                a = 8.0 * (double)len; /* each try is a recursive call: ~8x a plain test */
                b = 2;
                e++;
            } else {
                a = (double)len;
            }
            i = e;
        }
        sum += mult * a;
        mult *= b;
        if (guard + starts * (sum + mult) > budget)
            out->over = 1;
    }
    out->steps = guard + starts * (sum + mult);
    if (out->steps > budget)
        out->over = 1;
}
