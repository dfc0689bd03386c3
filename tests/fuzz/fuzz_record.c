/* libFuzzer target: a job record's files as another process left them (job.json, links, a
 * link's start, an agent's JSON report), read as `ddpjob status` reads them. Whatever they hold,
 * the reading stays inside its bounds, and no job id reaches the commands but in a scheduler's
 * shape (job_id_valid). */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/jobs/job_record.h"
#include "cli/jobs/json_doc.h"

/* A record folder in $TMPDIR (fuzz.sh: the run's directory), made on the first input. */
static char dir[4096];

static void put(const char *name, const uint8_t *data, size_t size)
{
    char path[sizeof dir + 64];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd < 0 || write(fd, data, size) != (ssize_t)size)
        abort();
    close(fd);
}

/* Every value of the document, walked as the readers walk it. */
static void walk(json_doc_t *doc, const json_t *n, int64_t *sum)
{
    if (!n)
        return;
    const char *rank = json_text(doc, n, "rank");
    *sum += rank ? (int64_t)strlen(rank) : 0;
    json_whole(n, "step", 0, INT64_MAX, sum);
    const json_t *ranks = json_child(n, "ranks");
    for (size_t i = 0; i < json_items(ranks); i++)
        walk(doc, json_item(ranks, i), sum);
    for (size_t i = 0; i < json_items(n); i++)
        walk(doc, json_item(n, i), sum);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!dir[0]) {
        const char *tmp = getenv("TMPDIR");
        snprintf(dir, sizeof dir, "%s/fuzz_record.XXXXXX", tmp && *tmp ? tmp : "/tmp");
        if (!mkdtemp(dir))
            abort();
        char link[sizeof dir + 16];
        snprintf(link, sizeof link, "%s/link-0", dir);
        mkdir(link, 0700);
    }
    put("job.json", data, size);
    put("links", data, size);
    put("link-0/started", data, size);
    job_record_t r;
    ddp_error_t err;
    if (job_record_read(dir, &r, &err) == 0) {
        for (int k = 0; k < r.nlinks; k++)
            if (r.links[k].id[0] && !job_id_valid(r.links[k].id))
                abort();
        if (r.checkpoint_signal[0] &&
            strspn(r.checkpoint_signal, "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789+") !=
                strlen(r.checkpoint_signal))
            abort();
        job_record_free(&r);
    }
    json_doc_t doc;
    if (json_doc_parse(&doc, (const char *)data, size) == 0) {
        int64_t sum = 0;
        walk(&doc, json_root(&doc), &sum);
        json_doc_free(&doc);
    }
    return 0;
}
