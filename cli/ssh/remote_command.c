#include "cli/ssh/remote_command.h"

#include <string.h>

#include "runtime/base/ddp_clock.h"

static void keep(void *arg, int stream, const char *data, size_t len)
{
    remote_result_t *r = arg;
    char *buf = stream == 0 ? r->out : r->err;
    size_t *have = stream == 0 ? &r->out_len : &r->err_len;
    size_t room = REMOTE_OUTPUT_MAX - *have;
    len = len < room ? len : room;
    memcpy(buf + *have, data, len);
    *have += len;
    buf[*have] = '\0';
}

int remote_command_run(ssh_session_t *s, const char *command, const char *input, size_t len,
                       int64_t deadline, remote_result_t *r, ddp_error_t *err)
{
    memset(r, 0, sizeof *r);
    r->status = -1;
    int rc = ssh_session_exec(s, command, input, len, deadline, err);
    ssh_session_eof(s);
    while (rc == 0 && ddp_ms_left(deadline) > 0)
        rc = ssh_session_pump(s, 200, keep, r, err);
    if (rc < 0)
        return -1;
    if (rc == 0)
        return ddp_error_set(err, "no end of the command by the deadline");
    r->status = ssh_session_exit_status(s);
    return 0;
}
