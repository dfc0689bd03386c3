#include "runtime/base/ddp_signal.h"

#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/signalfd.h>

int ddp_supervisor_signalfd(ddp_error_t *err)
{
    static const int sigs[] = {SIGCHLD, SIGTERM, SIGINT, SIGHUP, SIGUSR1, SIGUSR2};
    sigset_t mask;
    sigemptyset(&mask);
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++)
        sigaddset(&mask, sigs[i]);
    sigprocmask(SIG_BLOCK, &mask, NULL);
    int fd = signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC);
    if (fd < 0)
        return ddp_error_set(err, "signalfd: %s", strerror(errno));
    return fd;
}
