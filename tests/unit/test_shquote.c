/* Every quoted value must come back unchanged from a real bash, and run nothing. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli/spec/shquote.h"
#include "tests/unit/tap.h"

/* Everything the child `pid` writes to fd until it ends, malloc'd. */
static char *read_all(int fd, pid_t pid)
{
    char *out = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&out, &len);
    char buf[512];
    ssize_t n;
    while ((n = read(fd, buf, sizeof buf)) > 0)
        fwrite(buf, 1, (size_t)n, mem);
    fclose(mem);
    close(fd);
    waitpid(pid, NULL, 0);
    return out;
}

/* Runs `printf %s QUOTED` in `shell` (bash; or dash or csh, given the command in the form any
 * shell reads) and returns what it printed. */
static char *roundtrip_in(const char *shell, const char *value)
{
    char *q = shquote(value);
    char *script = NULL;
    if (asprintf(&script, "printf %%s %s", q) < 0)
        return NULL;
    free(q);
    if (strcmp(shell, "/bin/bash")) {
        char *any = shquote_for_any_shell(script);
        free(script);
        script = any;
    }
    int fds[2];
    if (pipe(fds) < 0)
        return NULL;
    pid_t pid = fork();
    if (pid == 0) {
        dup2(fds[1], 1);
        close(fds[0]);
        execl(shell, shell, "-c", script, (char *)NULL);
        _exit(127);
    }
    close(fds[1]);
    free(script);
    return read_all(fds[0], pid);
}

/* The same through shquote_stdin_runner: `printf %s QUOTED`, then the next line of stdin after
 * "|", on `shell`'s stdin as the runner's first line and "token". */
static char *stdin_roundtrip_in(const char *shell, const char *value)
{
    char *q = shquote(value), *script = NULL, *line = NULL, *runner = shquote_stdin_runner();
    if (!q || !runner ||
        asprintf(&script, "printf %%s %s; IFS= read -r t; printf '|%%s' \"$t\"", q) < 0 ||
        !(line = shquote_stdin_line(script)))
        return NULL;
    free(q);
    free(script);
    int in[2], out[2];
    if (pipe(in) < 0 || pipe(out) < 0)
        return NULL;
    pid_t pid = fork();
    if (pid == 0) {
        dup2(in[0], 0);
        dup2(out[1], 1);
        close(in[1]);
        close(out[0]);
        execl(shell, shell, "-c", runner, (char *)NULL);
        _exit(127);
    }
    close(in[0]);
    close(out[1]);
    ssize_t w = write(in[1], line, strlen(line));
    w += write(in[1], "token\n", 6);
    close(in[1]);
    char *got = read_all(out[0], pid);
    free(line);
    free(runner);
    return w > 0 ? got : NULL;
}

static char *bash_roundtrip(const char *value)
{
    return roundtrip_in("/bin/bash", value);
}

int main(void)
{
    static const char *const values[] = {
        "plain",
        "with space",
        "$(touch /tmp/ddpjob-pwned)",
        "`touch /tmp/ddpjob-pwned`",
        "it's",
        "\"double\"",
        "a;b",
        "new\nline",
        "tab\there",
        "back\\slash",
        "$HOME",
        "~root",
        "=x",
        "*",
        "!event",
        "\x01\x7f ctrl",
        "'",
        "''",
        "\\'",
        "ends with \\",
        "#hash",
        "a|b&c>d<e",
        "{a,b}",
        "-n",
        "\r\n",
        "ünïcode",
    };
    for (size_t i = 0; i < sizeof values / sizeof values[0]; i++) {
        char *got = bash_roundtrip(values[i]);
        char *q = shquote(values[i]);
        is_str(got, values[i], "bash reads %s back unchanged", q);
        ok(!strchr(q, '\n'), "quoted form of value %zu stays on one line", i);
        free(q);
        free(got);
    }
    /* An SSH server runs the command through the user's login shell, which may not be bash. */
    static const char *const shells[] = {"/bin/sh", "/bin/dash", "/usr/bin/tcsh"};
    for (size_t k = 0; k < sizeof shells / sizeof shells[0]; k++) {
        if (access(shells[k], X_OK))
            continue;
        for (size_t i = 0; i < sizeof values / sizeof values[0]; i++) {
            char *got = roundtrip_in(shells[k], values[i]);
            is_str(got, values[i], "%s hands value %zu to bash unchanged", shells[k], i);
            free(got);
        }
    }
    /* A command that must not show in `ps` comes on stdin: the command line is one constant. */
    static const char *const runners[] = {"/bin/bash", "/bin/sh", "/bin/dash", "/usr/bin/tcsh"};
    for (size_t k = 0; k < sizeof runners / sizeof runners[0]; k++) {
        if (access(runners[k], X_OK))
            continue;
        for (size_t i = 0; i < sizeof values / sizeof values[0]; i++) {
            char *want = NULL, *got = stdin_roundtrip_in(runners[k], values[i]);
            if (asprintf(&want, "%s|token", values[i]) < 0)
                return 1;
            is_str(got, want, "%s runs value %zu from stdin, the rest of stdin the command's",
                   runners[k], i);
            free(want);
            free(got);
        }
    }
    char *hostile = roundtrip_in("/bin/sh", "it's & touch /tmp/ddpjob-pwned #\n");
    is_str(hostile, "it's & touch /tmp/ddpjob-pwned #\n",
           "the env: value that ran under dash is data");
    free(hostile);
    ok(access("/tmp/ddpjob-pwned", F_OK) != 0, "nothing was executed");
    char *q = shquote("safe-path/x.y_z");
    is_str(q, "safe-path/x.y_z", "safe words stay bare");
    free(q);
    q = shquote("");
    is_str(q, "''", "the empty string is quoted");
    free(q);
    ok(shquote_is_identifier("NCCL_DEBUG") && shquote_is_identifier("_x1"), "identifiers");
    ok(!shquote_is_identifier("1X") && !shquote_is_identifier("A-B") && !shquote_is_identifier(""),
       "non-identifiers");
    return done_testing();
}
