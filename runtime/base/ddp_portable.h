/* ddp_portable: what Linux has and other POSIX systems (macOS, where researchers' laptops run
 * ddpjob's laptop commands) lack or spell otherwise, each behind one name: descriptors made
 * close-on-exec at birth, sends that raise no SIGPIPE, the path of the running program, a sort
 * with a context. Built with DDP_POSIX_ONLY (meson -Dlaptop_posix=true) every function takes
 * its POSIX path on Linux too, so that path is built and run here (tests/unit/test_portable.c,
 * tests/lint/portable.sh); the lines for macOS alone (_NSGetExecutablePath, SO_NOSIGPIPE) are
 * not built here. */
#ifndef DDP_PORTABLE_H
#define DDP_PORTABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/socket.h>

#if defined(__linux__) && !defined(DDP_POSIX_ONLY)
#define DDP_LINUX 1
#else
#define DDP_LINUX 0
#endif

/* send()'s flag against SIGPIPE (POSIX.1-2008); where the system lacks it (older macOS) the
 * sockets made here carry SO_NOSIGPIPE. */
#ifdef MSG_NOSIGNAL
#define DDP_MSG_NOSIGNAL MSG_NOSIGNAL
#else
#define DDP_MSG_NOSIGNAL 0
#endif

/* pipe(2) with both ends close-on-exec; -1 with errno. Outside Linux a thread's fork between the
 * pipe and the flag can inherit the ends: the CLI forks from its main thread only. */
int ddp_pipe_cloexec(int fds[2]);

/* socket(2), close-on-exec, nonblocking when asked, raising no SIGPIPE; -1 with errno. */
int ddp_socket_cloexec(int domain, int type, int protocol, bool nonblock);

/* socketpair(2) with both ends close-on-exec and raising no SIGPIPE; -1 with errno. */
int ddp_socketpair_cloexec(int domain, int type, int sv[2]);

/* Where POSIX alone says nothing of the running program's path, it is found from argv[0] (and
 * PATH) as main received it: main notes it before anything asks. */
void ddp_self_exe_note(const char *argv0);

/* The running program's absolute path with links resolved (malloc'd); NULL with errno. */
char *ddp_self_exe(void);

/* A stable sort of n elements of `size` bytes by cmp(a, b, arg) (glibc's qsort_r order, which
 * macOS's and C11's spell otherwise). Falls back to insertion when out of memory. */
void ddp_sort_r(void *base, size_t n, size_t size, int (*cmp)(const void *, const void *, void *),
                void *arg);

#endif
