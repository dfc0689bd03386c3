#include "runtime/base/ddp_signal.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "runtime/base/ddp_portable.h"
#if DDP_LINUX
#include <sys/signalfd.h>
#endif

static const int supervised[] = {SIGCHLD, SIGTERM, SIGINT, SIGHUP, SIGUSR1, SIGUSR2};
#define NSUPERVISED (sizeof supervised / sizeof supervised[0])

#if DDP_LINUX
int ddp_supervisor_signals(ddp_error_t *err)
{
    sigset_t mask;
    sigemptyset(&mask);
    for (size_t i = 0; i < NSUPERVISED; i++)
        sigaddset(&mask, supervised[i]);
    sigprocmask(SIG_BLOCK, &mask, NULL);
    int fd = signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC);
    if (fd < 0)
        return ddp_error_set(err, "signalfd: %s", strerror(errno));
    return fd;
}

int ddp_supervisor_signal_take(int fd)
{
    struct signalfd_siginfo si;
    return read(fd, &si, sizeof si) == sizeof si ? (int)si.ssi_signo : 0;
}

int ddp_signal_wait(const sigset_t *blocked, int timeout_ms)
{
    struct timespec t = {timeout_ms / 1000, (timeout_ms % 1000) * 1000000L};
    int sig = sigtimedwait(blocked, NULL, &t);
    return sig > 0 ? sig : 0;
}
#else
static int signal_pipe[2] = {-1, -1};

static void write_signal(int sig)
{
    int saved = errno;
    unsigned char byte = (unsigned char)sig;
    /* Full: the reader has enough waiting to wake it. */
    (void)!write(signal_pipe[1], &byte, 1);
    errno = saved;
}

int ddp_supervisor_signals(ddp_error_t *err)
{
    if (signal_pipe[0] < 0) {
        if (ddp_pipe_cloexec(signal_pipe) < 0)
            return ddp_error_set(err, "pipe: %s", strerror(errno));
        for (int i = 0; i < 2; i++)
            fcntl(signal_pipe[i], F_SETFL, fcntl(signal_pipe[i], F_GETFL) | O_NONBLOCK);
    }
    struct sigaction sa = {.sa_handler = write_signal, .sa_flags = SA_RESTART};
    sigemptyset(&sa.sa_mask);
    for (size_t i = 0; i < NSUPERVISED; i++)
        if (sigaction(supervised[i], &sa, NULL) < 0)
            return ddp_error_set(err, "sigaction: %s", strerror(errno));
    return signal_pipe[0];
}

int ddp_supervisor_signal_take(int fd)
{
    unsigned char byte;
    return read(fd, &byte, 1) == 1 ? byte : 0;
}

#ifndef NSIG
#define NSIG 65
#endif

static int take_pending(const sigset_t *blocked)
{
    sigset_t pending;
    if (sigpending(&pending) < 0)
        return 0;
    for (int sig = 1; sig < NSIG; sig++)
        if (sigismember(&pending, sig) == 1 && sigismember(blocked, sig) == 1) {
            sigset_t one;
            sigemptyset(&one);
            sigaddset(&one, sig);
            int got = 0;
            return sigwait(&one, &got) == 0 ? got : 0;
        }
    return 0;
}

int ddp_signal_wait(const sigset_t *blocked, int timeout_ms)
{
    int sig = take_pending(blocked);
    if (sig)
        return sig;
    struct timespec t = {timeout_ms / 1000, (timeout_ms % 1000) * 1000000L};
    nanosleep(&t, NULL);
    return take_pending(blocked);
}
#endif
