/* The commands a worker's container starts with, word for word, for each runtime: apptainer's
 * and singularity's checked against their documented CLI (`exec [options] IMAGE COMMAND`,
 * -B/--bind src[:dest[:opts]], --pwd, --env), which cannot run on Debian 12; enroot's and
 * ch-run's as the container suites run them. And the spec's and the options' one mount parser. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/workers/container.h"
#include "tests/unit/tap.h"

/* argv as one line of words. */
static char *joined(char **argv)
{
    static char line[4096];
    line[0] = '\0';
    for (char **w = argv; w && *w; w++)
        snprintf(line + strlen(line), sizeof line - strlen(line), "%s%s", w == argv ? "" : " ", *w);
    return line;
}

static void test_apptainer(void)
{
    container_mount_t mounts[] = {{"/g/data/xy1/imagenet", "/data", true},
                                  {"/scratch/ab12", "/scratch/ab12", false}};
    char *names[] = {"PYTHONPATH"};
    container_t c = {.runtime = CONTAINER_SINGULARITY,
                     .image = "/scratch/ab12/pytorch.sif",
                     .mounts = mounts,
                     .nmounts = 2,
                     .env_names = names,
                     .nenv_names = 1};
    char *command[] = {"python3", "-u", "train.py", NULL};
    char *env[] = {"RANK=1", "PATH=/usr/bin", "PYTHONPATH=/opt/lib", NULL};
    ddp_error_t err = {0};
    char **argv =
        container_command(&c, command, env, "/scratch/ab12/run", "/tmp/a/attempt_0", &err);
    const char *nv = access("/dev/nvidiactl", F_OK) == 0 ? " --nv" : "";
    char want[1024];
    snprintf(
        want, sizeof want,
        "singularity exec --env=PYTHONPATH=/opt/lib%s --bind /scratch/ab12/run:/scratch/ab12/run "
        "--bind /tmp/a/attempt_0:/tmp/a/attempt_0 --bind /g/data/xy1/imagenet:/data:ro "
        "--bind /scratch/ab12:/scratch/ab12 --pwd /scratch/ab12/run /scratch/ab12/pytorch.sif "
        "python3 -u train.py",
        nv);
    is_str(joined(argv), want,
           "singularity exec: the forced variable, binds (cwd, attempt, the spec's), --pwd, image, "
           "command");
    container_command_free(argv);
    c.runtime = CONTAINER_APPTAINER;
    argv = container_command(&c, command, env, "/w", NULL, &err);
    ok(argv && !strcmp(argv[0], "apptainer") && !strcmp(argv[1], "exec"), "apptainer exec alike");
    container_command_free(argv);
}

static void test_enroot_and_charliecloud(void)
{
    container_t c = {.runtime = CONTAINER_ENROOT, .image = "/i/img.sqsh"};
    char *command[] = {"train", NULL}, *env[] = {NULL};
    ddp_error_t err = {0};
    char **argv = container_command(&c, command, env, "/w", "/t/attempt_0", &err);
    is_str(joined(argv),
           "enroot start --conf=/t/attempt_0/enroot.conf --mount "
           "/w:/w:none:x-create=auto,rbind,rw,nosuid --mount "
           "/t/attempt_0:/t/attempt_0:none:x-create=auto,rbind,rw,nosuid /i/img.sqsh /bin/sh -c "
           "cd -- \"$1\" && shift && exec \"$@\" sh /w train",
           "enroot start: its config (the environment), binds, the image, a shell that enters /w");
    container_command_free(argv);
    container_mount_t ro[] = {{"/d", "/data", true}};
    c = (container_t){
        .runtime = CONTAINER_CHARLIECLOUD, .image = "/tmp", .mounts = ro, .nmounts = 1};
    ok(!container_command(&c, command, env, "/tmp", NULL, &err) &&
           strstr(err.msg, "charliecloud's ch-run binds read-write only (/d)"),
       "ch-run: a read-only mount is refused");
    c = (container_t){.runtime = CONTAINER_CHARLIECLOUD, .image = "/i/img"};
    argv = container_command(&c, command, env, "/tmp/w", NULL, &err);
    is_str(joined(argv), "ch-run --cd /tmp/w /i/img -- train",
           "ch-run: /tmp is shared, not bound; --cd, the image folder, --, the command");
    container_command_free(argv);
    c = (container_t){.runtime = CONTAINER_ENROOT, .image = "/i/img.sqsh"};
    ok(!container_command(&c, command, env, "/w/run 1", NULL, &err) &&
           strstr(err.msg, "enroot cannot bind /w/run 1: its name holds a ':', ',' or blank"),
       "enroot: a working folder whose name has a blank is refused, named");
}

static void test_mounts(void)
{
    char text[64];
    char why[128];
    container_mount_t m;
    strcpy(text, "/a");
    ok(container_mount_parse(text, &m, why, sizeof why) == 0 && !strcmp(m.dst, "/a") &&
           !m.read_only,
       "SRC alone: bound at its own path");
    strcpy(text, "/a:/b:ro");
    ok(container_mount_parse(text, &m, why, sizeof why) == 0 && !strcmp(m.src, "/a") &&
           !strcmp(m.dst, "/b") && m.read_only,
       "SRC:DST:ro");
    const char *bad[] = {"a:/b", "/a:b", "/a,b", "/a:/b:rw", "/a b", "", "/a:/../etc", "/a:/b/.."};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        strcpy(text, bad[i]);
        ok(container_mount_parse(text, &m, why, sizeof why) != 0, "\"%s\" is refused: %s", bad[i],
           why);
    }
    const char *wanted;
    ok(container_image_fits(CONTAINER_PYXIS, "/x.sqsh", &wanted) &&
           !container_image_fits(CONTAINER_ENROOT, "/x.sif", &wanted) &&
           container_image_fits(CONTAINER_APPTAINER, "/x.sif", &wanted) &&
           !container_image_fits(CONTAINER_CHARLIECLOUD, "/x.sif", &wanted),
       "each runtime's kind of image");
}

int main(void)
{
    test_apptainer();
    test_enroot_and_charliecloud();
    test_mounts();
    return done_testing();
}
