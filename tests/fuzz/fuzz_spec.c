/* libFuzzer target: a job spec (YAML) loaded and validated, then, when it is valid, rendered for
 * every scheduler, as `ddpjob render` does. ASan/UBSan catch memory and arithmetic errors. */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "cli/spec/diag.h"
#include "cli/script/render.h"
#include "cli/spec/spec.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    int fd = memfd_create("spec.yaml", MFD_CLOEXEC);
    if (fd < 0 || write(fd, data, size) != (ssize_t)size) {
        if (fd >= 0)
            close(fd);
        return 0;
    }
    char path[64];
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    diag_t *diag = diag_create(path);
    ddp_error_t err;
    job_spec_t *spec = diag ? spec_load(path, NULL, NULL, 0, diag, &err) : NULL;
    const sched_ops_t *ops;
    for (size_t s = 0; spec && diag->count == 0 && (ops = sched_at(s)); s++) {
        if (ops->check_spec)
            ops->check_spec(spec, diag);
        if (diag->count)
            break;
        FILE *out = fopen("/dev/null", "w"), *notes = fopen("/dev/null", "w");
        render_opts_t opts = {.sched = ops, .bindir = "/opt/ddpjob/bin"};
        if (out && notes)
            render_script(spec, &opts, out, notes, &err);
        if (out)
            fclose(out);
        if (notes)
            fclose(notes);
    }
    spec_destroy(spec);
    diag_destroy(diag);
    close(fd);
    return 0;
}
