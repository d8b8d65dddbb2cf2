/* sopctl.c — the command-line face of libsop (placeholder until the CLI lands). */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "sop.h"

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "version") == 0) {
        printf("sopctl %s\n", sop_version());
        return 0;
    }
    if (argc > 1 && strcmp(argv[1], "dump") == 0) /* temporary, until the dispatcher lands */
        return cmd_dump(argc - 1, argv + 1);
    fprintf(stderr, "usage: sopctl version | dump --pid N [--json] [--native]\n");
    return 2;
}
