/* Every quoted value must come back unchanged from a real bash, and run nothing. */
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli/spec/shquote.h"
#include "tests/unit/tap.h"

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
    char *out = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&out, &len);
    char buf[512];
    ssize_t n;
    while ((n = read(fds[0], buf, sizeof buf)) > 0)
        fwrite(buf, 1, (size_t)n, mem);
    fclose(mem);
    close(fds[0]);
    waitpid(pid, NULL, 0);
    free(script);
    return out;
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
