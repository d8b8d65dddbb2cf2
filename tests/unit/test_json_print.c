/* test_json_print.c — sop__json_print writes the value tree itself (issue 27: no cJSON tree
 * per print); its text must be byte for byte what cJSON_Print / cJSON_PrintUnformatted write
 * for the same tree, since reports, evidence files and dumps are compared and parsed by
 * others. Random trees (nested objects and arrays, empty ones, every control byte and
 * quote/backslash in strings and keys, integers, saturating ints, fractions, tiny and huge
 * numbers, NaN and infinities) are printed both ways, pretty and compact, and compared after
 * the same escaping pass. Depends on engine/core/json.c, value.c, escape.c and cJSON. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdint.h>

#include "escape.h"
#include "json.h"
#include "t.h"
#include "value.h"

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint64_t next(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static double number(void)
{
    switch (next() % 10) {
    case 0:
        return (double)(int64_t)(next() % 2000001) - 1000000.0;
    case 1:
        return (double)(next() % 10000000000000ull) * ((next() & 1) ? 1 : -1);
    case 2:
        return (double)(next() % 1000000) / 1000.0;
    case 3:
        return ldexp((double)(next() % 1000000), -(int)(next() % 80));
    case 4:
        return ldexp((double)(next() % 1000000), (int)(next() % 200));
    case 5:
        return (double)INT32_MAX + (double)(next() % 3) - 1;
    case 6:
        return (double)INT32_MIN + (double)(next() % 3) - 1;
    case 7:
        return (next() & 1) ? NAN : ((next() & 1) ? INFINITY : -INFINITY);
    case 8:
        return 0.1 * (double)(next() % 100);
    default: {
        union {
            uint64_t u;
            double d;
        } x = {next()};
        return x.d;
    }
    }
}

static void text(char *s, size_t cap)
{
    /* quotes, backslashes, C0 controls, DEL, UTF-8 (2 and 3 bytes), a C1 control (c2 85),
     * bytes that start no valid sequence (ff, a lone continuation 80, overlong c0) */
    static const char pool[] =
        "ab\"\\/\x01\x1f\x7f \t\n\r\b\f\xc3\xa9\xe4\xb8\xad\xc2\x85\xff\x80\xc0"
        "{}[]:,";
    size_t n = next() % (cap - 1);
    for (size_t i = 0; i < n; i++)
        s[i] = pool[next() % (sizeof pool - 1)];
    s[n] = '\0';
}

/* A random tree, built as a sop_value and as a cJSON tree side by side. */
static sop_value *tree(cJSON **j, int depth)
{
    int kind = depth > 4 ? (int)(next() % 4) : (int)(next() % 6);
    char s[24];
    switch (kind) {
    case 0:
        *j = cJSON_CreateNull();
        return sop__v_null();
    case 1: {
        bool b = next() & 1;
        *j = cJSON_CreateBool(b);
        return sop__v_bool(b);
    }
    case 2: {
        double d = number();
        *j = (isnan(d) || isinf(d)) ? cJSON_CreateNull() : cJSON_CreateNumber(d);
        return sop__v_num(d);
    }
    case 3:
        text(s, sizeof s);
        *j = cJSON_CreateString(s);
        return sop__v_str(s);
    case 4: {
        sop_value *a = sop__v_arr();
        *j = cJSON_CreateArray();
        for (size_t i = 0, n = next() % 5; i < n; i++) {
            cJSON *cj;
            sop_value *c = tree(&cj, depth + 1);
            sop__v_push(a, c);
            cJSON_AddItemToArray(*j, cj);
        }
        return a;
    }
    default: {
        sop_value *o = sop__v_obj();
        *j = cJSON_CreateObject();
        for (size_t i = 0, n = next() % 5; i < n; i++) {
            cJSON *cj;
            sop_value *c = tree(&cj, depth + 1);
            snprintf(s, sizeof s, "k%zu", i);
            if (next() % 4 == 0)
                text(s, 8);
            sop__v_set(o, s, c);
            cJSON_AddItemToObject(*j, s, cj);
        }
        return o;
    }
    }
}

int main(void)
{
    int same = 0;
    for (int i = 0; i < 3000; i++) {
        cJSON *j = NULL;
        sop_value *v = tree(&j, 0);
        for (int pretty = 0; pretty <= 1; pretty++) {
            char *ours = sop__json_print(v, pretty);
            char *raw = pretty ? cJSON_Print(j) : cJSON_PrintUnformatted(j);
            char *theirs = raw ? sop__esc_json_text(raw) : NULL;
            if (ours && theirs && strcmp(ours, theirs) == 0)
                same++;
            else
                CHECK_EQ_S(ours, theirs);
            free(ours);
            free(theirs);
            cJSON_free(raw);
        }
        sop__v_free(v);
        cJSON_Delete(j);
    }
    CHECK_EQ_I(same, 6000);
    return t_done();
}
