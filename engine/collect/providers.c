/* providers.c — the table of evidence providers, in emit order, made from the list in
 * provider.h (SOP_PROVIDERS). Depends on provider.h. */
#include "provider.h"

char sop__provider_on;

#define SOP__PROVIDER_REF(name) &sop__provider_##name,
const sop_provider *const sop__providers[SOP_NPROVIDERS] = {SOP_PROVIDERS(SOP__PROVIDER_REF)};
#undef SOP__PROVIDER_REF
const size_t sop__nproviders = sizeof sop__providers / sizeof sop__providers[0];

size_t sop__collect_groups(const sop_evk_group **out, size_t cap)
{
    size_t n = 0;
    for (size_t i = 0; i < sop__nproviders; i++)
        for (const sop_evk_group *g = sop__providers[i]->groups; g && g->group; g++, n++)
            if (n < cap)
                out[n] = g;
    return n;
}
