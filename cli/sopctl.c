/* sopctl.c — the command-line face of libsop (placeholder until the CLI lands). */
#include <stdio.h>
#include <string.h>

#include "sop.h"

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "version") == 0) {
        printf("sopctl %s\n", sop_version());
        return 0;
    }
    fprintf(stderr, "usage: sopctl version\n");
    return 2;
}
