/* ddp_portable's and ddp_signal's promises, built twice (tests/meson.build): with Linux's calls
 * and with DDP_POSIX_ONLY, the paths a macOS build takes. Descriptors are born close-on-exec,
 * the running program's path is found (from argv[0] on the POSIX path), the sort is stable and
 * follows its context, the supervisor's signals and a blocked signal are each taken once, and
 * random bytes come past getentropy's 256 a call. */
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include "runtime/base/ddp_file.h"
#include "runtime/base/ddp_portable.h"
#include "runtime/base/ddp_signal.h"
#include "tests/unit/tap.h"

static int cloexec(int fd)
{
    return (fcntl(fd, F_GETFD) & FD_CLOEXEC) != 0;
}

static void descriptors(void)
{
    int p[2], sv[2];
    ok(ddp_pipe_cloexec(p) == 0 && cloexec(p[0]) && cloexec(p[1]),
       "a pipe's ends are close-on-exec");
    int s = ddp_socket_cloexec(AF_INET, SOCK_STREAM, 0, false);
    ok(s >= 0 && cloexec(s) && !(fcntl(s, F_GETFL) & O_NONBLOCK),
       "a socket is close-on-exec, blocking");
    int n = ddp_socket_cloexec(AF_INET, SOCK_STREAM, 0, true);
    ok(n >= 0 && cloexec(n) && (fcntl(n, F_GETFL) & O_NONBLOCK), "... and nonblocking when asked");
    ok(ddp_socketpair_cloexec(AF_UNIX, SOCK_STREAM, sv) == 0 && cloexec(sv[0]) && cloexec(sv[1]),
       "a socket pair's ends are close-on-exec");
    close(sv[1]);
    signal(SIGPIPE, SIG_DFL);
    /* Were SIGPIPE raised, the test would die here. */
    ok(send(sv[0], "x", 1, DDP_MSG_NOSIGNAL) < 0, "a send to a closed peer fails without SIGPIPE");
    close(p[0]), close(p[1]), close(s), close(n), close(sv[0]);
}

static void self_exe(const char *argv0)
{
    char want[PATH_MAX];
    ssize_t len = readlink("/proc/self/exe", want, sizeof want - 1);
    want[len > 0 ? len : 0] = '\0';
    ddp_self_exe_note(argv0);
    char *got = ddp_self_exe();
    is_str(got, want, "the running program's path (argv[0] %s)", argv0);
    free(got);
}

typedef struct {
    int key, seq;
} item_t;

static int by_key(const void *a, const void *b, void *arg)
{
    int sign = *(const int *)arg;
    return sign * (((const item_t *)a)->key - ((const item_t *)b)->key);
}

static void sorting(void)
{
    enum { N = 1000 };
    item_t items[N];
    srand(7);
    for (int i = 0; i < N; i++)
        items[i] = (item_t){rand() % 50, i};
    int descending = -1, sorted = 1;
    ddp_sort_r(items, N, sizeof items[0], by_key, &descending);
    for (int i = 1; i < N; i++)
        if (items[i - 1].key < items[i].key ||
            (items[i - 1].key == items[i].key && items[i - 1].seq > items[i].seq))
            sorted = 0;
    ok(sorted, "a sort follows its context (descending) and keeps ties in order");
    ddp_sort_r(items, 1, sizeof items[0], by_key, &descending);
    ddp_sort_r(items, 0, sizeof items[0], by_key, &descending);
    ok(1, "one element and none are sorted without a fault");
}

static void signals(void)
{
    ddp_error_t err = {0};
    int fd = ddp_supervisor_signals(&err);
    ok(fd >= 0 && cloexec(fd), "the supervisor's signal descriptor (%s)", err.msg);
    raise(SIGUSR1);
    raise(SIGTERM);
    int first = ddp_supervisor_signal_take(fd), second = ddp_supervisor_signal_take(fd);
    ok((first == SIGUSR1 && second == SIGTERM) || (first == SIGTERM && second == SIGUSR1),
       "two signals taken from it (%d, %d)", first, second);
    ok(ddp_supervisor_signal_take(fd) == 0, "... and then none");
    sigset_t blocked;
    sigemptyset(&blocked);
    sigaddset(&blocked, SIGALRM);
    sigprocmask(SIG_BLOCK, &blocked, NULL);
    raise(SIGALRM);
    ok(ddp_signal_wait(&blocked, 50) == SIGALRM, "a blocked signal waited for is taken");
    ok(ddp_signal_wait(&blocked, 50) == 0,
       "... once: the next wait ends at its deadline with none");
}

static void random_bytes(void)
{
    unsigned char buf[1000] = {0};
    int zeros = 0;
    ok(ddp_random(buf, sizeof buf) == 0, "1000 random bytes (four getentropy calls)");
    for (size_t i = 744; i < sizeof buf; i++)
        zeros += !buf[i];
    ok(zeros < 20, "... the last call's filled too (%d zero bytes of 256)", zeros);
}

int main(int argc, char **argv)
{
    (void)argc;
    descriptors();
    self_exe(argv[0]);
    sorting();
    signals();
    random_bytes();
    return done_testing();
}
