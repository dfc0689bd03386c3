#include "runtime/base/ddp_parse.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

int ddp_parse_long(const char *text, long lo, long hi, long *out)
{
    if (!text)
        return -1;
    char *end;
    errno = 0;
    long v = strtol(text, &end, 10);
    if (errno || end == text || *end || v < lo || v > hi)
        return -1;
    *out = v;
    return 0;
}

int ddp_parse_int(const char *text, int lo, int hi, int *out)
{
    long v;
    if (ddp_parse_long(text, lo, hi, &v))
        return -1;
    *out = (int)v;
    return 0;
}

int ddp_parse_double(const char *text, double lo, double hi, double *out)
{
    if (!text)
        return -1;
    char *end;
    errno = 0;
    double v = strtod(text, &end);
    if (errno || end == text || *end || !(v >= lo && v <= hi))
        return -1;
    *out = v;
    return 0;
}

/* Linux's numbering on every architecture ddpjob builds for (x86-64, aarch64). */
static const char *const signal_names[] = {
    [SIGHUP] = "HUP",   [SIGINT] = "INT",       [SIGQUIT] = "QUIT", [SIGILL] = "ILL",
    [SIGTRAP] = "TRAP", [SIGABRT] = "ABRT",     [SIGBUS] = "BUS",   [SIGFPE] = "FPE",
    [SIGKILL] = "KILL", [SIGUSR1] = "USR1",     [SIGSEGV] = "SEGV", [SIGUSR2] = "USR2",
    [SIGPIPE] = "PIPE", [SIGALRM] = "ALRM",     [SIGTERM] = "TERM", [SIGSTKFLT] = "STKFLT",
    [SIGCHLD] = "CHLD", [SIGCONT] = "CONT",     [SIGSTOP] = "STOP", [SIGTSTP] = "TSTP",
    [SIGTTIN] = "TTIN", [SIGTTOU] = "TTOU",     [SIGURG] = "URG",   [SIGXCPU] = "XCPU",
    [SIGXFSZ] = "XFSZ", [SIGVTALRM] = "VTALRM", [SIGPROF] = "PROF", [SIGWINCH] = "WINCH",
    [SIGPOLL] = "POLL", [SIGPWR] = "PWR",       [SIGSYS] = "SYS",
};

const char *ddp_signal_name(int sig)
{
    return sig > 0 && (size_t)sig < sizeof signal_names / sizeof signal_names[0] ? signal_names[sig]
                                                                                 : NULL;
}

int ddp_parse_signal(const char *text)
{
    long number;
    if (!text)
        return -1;
    if (ddp_parse_long(text, 1, NSIG - 1, &number) == 0)
        return (int)number;
    const char *name = strncmp(text, "SIG", 3) ? text : text + 3;
    for (int sig = 1; sig < NSIG; sig++) {
        const char *abbrev = ddp_signal_name(sig);
        if (abbrev && !strcmp(abbrev, name))
            return sig;
    }
    return -1;
}

int ddp_plain_name(const char *text, const char *extra)
{
    if (!*text || *text == '-' || *text == '.')
        return 0;
    for (; *text; text++)
        if (!(*text >= 'a' && *text <= 'z') && !(*text >= 'A' && *text <= 'Z') &&
            !(*text >= '0' && *text <= '9') && !strchr(extra, *text))
            return 0;
    return 1;
}
