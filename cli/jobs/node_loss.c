#include "cli/jobs/node_loss.h"

#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/jobs/json_doc.h"
#include "runtime/base/ddp_file.h"

/* The host of the node a report's first failure says was lost (its kind "lost"), into host. */
static int report_names_loss(const char *path, char *host, size_t size)
{
    ddp_error_t err;
    size_t len;
    char *text = ddp_read_file_max(path, JSON_DOC_MAX_BYTES, &len, &err);
    json_doc_t doc;
    int found = 0;
    if (text && json_doc_parse(&doc, text, len) == 0) {
        const json_t *first = json_child(json_root(&doc), "first_failure");
        const char *kind = json_text(&doc, first, "kind"), *lost = json_text(&doc, first, "host");
        if (kind && !strcmp(kind, "lost") && lost && lost[0] && strcmp(lost, "?")) {
            snprintf(host, size, "%s", lost);
            found = 1;
        }
        json_doc_free(&doc);
    }
    free(text);
    return found;
}

int node_loss_find(const char *dir, int link, const char *node0_host, char *host, size_t size)
{
    char pattern[8192];
    snprintf(pattern, sizeof pattern, "%s/link-%d/error-node*.json", dir, link);
    glob_t g;
    int reports = glob(pattern, 0, NULL, &g) == 0 ? (int)g.gl_pathc : 0, found = 0;
    for (int i = 0; i < reports && !found; i++)
        found = report_names_loss(g.gl_pathv[i], host, size);
    globfree(&g);
    if (found || reports)
        return found;
    snprintf(pattern, sizeof pattern, "%s/link-%d/history.jsonl", dir, link);
    if (access(pattern, F_OK) != 0)
        return 0;
    snprintf(host, size, "%s", node0_host);
    return 1;
}
