/* The peak resident memory of a command, for bench/run.sh's launcher table.
 *   peak_rss COMMAND...   -> `KiB` on stdout (the command's own output is discarded)
 * The largest RSS of the command or of anything it waited for (wait4's ru_maxrss). Forked from
 * this small process, so the figure is not inflated by the measuring program's own memory (a
 * Python parent's would be: the child's RSS before exec counts). */
#include <fcntl.h>
#include <stdio.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: peak_rss COMMAND...\n");
        return 2;
    }
    pid_t pid = fork();
    if (pid < 0)
        return 1;
    if (pid == 0) {
        int null = open("/dev/null", O_WRONLY);
        dup2(null, 1);
        dup2(null, 2);
        execvp(argv[1], argv + 1);
        _exit(127);
    }
    int status;
    struct rusage ru;
    if (wait4(pid, &status, 0, &ru) < 0)
        return 1;
    printf("%ld\n", ru.ru_maxrss);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}
