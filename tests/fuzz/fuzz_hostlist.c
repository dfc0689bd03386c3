/* libFuzzer target: hostlist expressions and node files. An expression that expands must
 * compress to one that expands to the same hosts (the round trip the scripts rely on); a node
 * file must parse or fail cleanly. ASan/UBSan catch the rest. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/job/hostlist.h"

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The hosts of hl, sorted (compression may reorder within a group); the caller frees the array. */
static char **sorted_hosts(const ddp_hostlist_t *hl)
{
    char **v = malloc((hl->count + 1) * sizeof *v);
    if (!v)
        abort();
    memcpy(v, hl->hosts, hl->count * sizeof *v);
    qsort(v, hl->count, sizeof *v, cmp_str);
    return v;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 1);
    if (!text)
        return 0;
    memcpy(text, data, size);
    text[size] = '\0';
    ddp_error_t err;
    ddp_hostlist_t *hl = ddp_hostlist_expand(text, &err);
    if (hl) {
        char *compressed = ddp_hostlist_compress(hl);
        ddp_hostlist_t *again = compressed ? ddp_hostlist_expand(compressed, &err) : NULL;
        if (!again || again->count != hl->count)
            abort();
        char **a = sorted_hosts(hl), **b = sorted_hosts(again);
        for (size_t i = 0; i < hl->count; i++)
            if (strcmp(a[i], b[i]))
                abort();
        free(a);
        free(b);
        ddp_hostlist_destroy(again);
        free(compressed);
        ddp_hostlist_destroy(hl);
    }
    ddp_hostlist_destroy(ddp_hostlist_from_nodefile_text(text, "fuzz", &err));
    free(text);
    return 0;
}
