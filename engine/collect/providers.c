/* providers.c — the table of evidence providers, in emit order, made from the list in
 * provider.h (SOP_PROVIDERS). Depends on provider.h. */
#include "provider.h"

char sop__provider_on;

#define SOP__PROVIDER_REF(name) &sop__provider_##name,
const sop_provider *const sop__providers[SOP_NPROVIDERS] = {SOP_PROVIDERS(SOP__PROVIDER_REF)};
#undef SOP__PROVIDER_REF
const size_t sop__nproviders = sizeof sop__providers / sizeof sop__providers[0];
