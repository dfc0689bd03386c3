#include "agent/supervision/fingerprint.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#ifdef __GLIBC__
#include <gnu/libc-version.h>
#endif
#include <ifaddrs.h>
#include <fcntl.h>
#include <signal.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include "runtime/base/ddp_hmac.h"
#include "runtime/base/spawn.h"

extern char **environ;

/* nvidia-smi and python are asked with this deadline each: a wedged GPU hangs nvidia-smi. */
#define PROBE_MS 10000

/* One fact; tabs and line ends in the value become blanks, so the format stays a line per fact. */
static void fact(FILE *f, const char *name, const char *value)
{
    fprintf(f, "%s\t", name);
    for (const char *p = value; *p; p++)
        fputc(*p == '\t' || *p == '\n' || *p == '\r' ? ' ' : *p, f);
    fputc('\n', f);
}

/* What a probe's failure says: "none" when its program is absent. */
static const char *probe_failure(const char *program, int ran, const ddp_spawn_result_t *r,
                                 const ddp_error_t *err, char *buf, size_t size)
{
    if (!ran && err->code == ENOENT)
        return "none";
    if (!ran)
        snprintf(buf, size, "%s: %.400s", program, err->msg);
    else
        snprintf(buf, size, "%s failed (exit %d): %.200s", program, r->status,
                 r->err ? r->err : "");
    return buf;
}

/* GPUs, their count and the driver, as nvidia-smi reports them. */
static void probe_gpus(FILE *f)
{
    char *argv[] = {"nvidia-smi", "--query-gpu=name,memory.total,driver_version",
                    "--format=csv,noheader,nounits", NULL};
    ddp_spawn_result_t r = {0};
    ddp_error_t err = {0};
    char why[512];
    int ran = ddp_spawn_capture(argv, NULL, PROBE_MS, &r, &err) == 0;
    if (!ran || r.status != 0) {
        const char *failed = probe_failure("nvidia-smi", ran, &r, &err, why, sizeof why);
        fact(f, FP_GPUS, failed);
        fact(f, FP_GPU_COUNT, "0");
        fact(f, FP_DRIVER, failed);
        ddp_spawn_result_free(&r);
        return;
    }
    /* "NAME, MiB, DRIVER" per GPU: the models are listed once each, with their counts. */
    char models[1024] = "", driver[128] = "none", model[256], last[256] = "";
    int count = 0, same = 0;
    char *saved;
    for (char *line = strtok_r(r.out, "\n", &saved); line; line = strtok_r(NULL, "\n", &saved)) {
        char name[200], mem[32], drv[100];
        if (sscanf(line, "%199[^,], %31[^,], %99s", name, mem, drv) != 3)
            continue;
        snprintf(model, sizeof model, "%s (%s MiB)", name, mem);
        snprintf(driver, sizeof driver, "%s", drv);
        if (count && strcmp(model, last)) {
            size_t n = strlen(models);
            snprintf(models + n, sizeof models - n, "%s%d x %s", n ? "; " : "", same, last);
            same = 0;
        }
        snprintf(last, sizeof last, "%s", model);
        same++;
        count++;
    }
    if (count) {
        size_t n = strlen(models);
        snprintf(models + n, sizeof models - n, "%s%d x %s", n ? "; " : "", same, last);
    }
    char count_text[16];
    snprintf(count_text, sizeof count_text, "%d", count);
    fact(f, FP_GPUS, count ? models : "none");
    fact(f, FP_GPU_COUNT, count_text);
    fact(f, FP_DRIVER, driver);
    ddp_spawn_result_free(&r);
}

/* A library's version through its own entry point (int fn(int *)), without initialising it. */
static int library_version(const char *library, const char *symbol, int *version)
{
    void *handle = dlopen(library, RTLD_LAZY | RTLD_LOCAL);
    if (!handle)
        return -1;
    int (*get)(int *);
    *(void **)&get = dlsym(handle, symbol); /* POSIX's way from an object to a function pointer */
    int rc = get && get(version) == 0 ? 0 : -1;
    dlclose(handle);
    return rc;
}

/* The node's glibc, which its workers (python, torch) run on: this agent's own where it is a
 * glibc program; asked of the system's getconf where the agent is static on another C library. */
static void probe_glibc(FILE *f)
{
#ifdef __GLIBC__
    fact(f, FP_GLIBC, gnu_get_libc_version());
#else
    char *argv[] = {"getconf", "GNU_LIBC_VERSION", NULL};
    ddp_spawn_result_t r = {0};
    ddp_error_t err = {0};
    int ran = ddp_spawn_capture(argv, NULL, PROBE_MS, &r, &err) == 0 && r.status == 0 && r.out;
    /* "glibc 2.36\n" */
    const char *version = ran && !strncmp(r.out, "glibc ", 6) ? r.out + 6 : NULL;
    if (version)
        r.out[strcspn(r.out, "\n")] = '\0';
    fact(f, FP_GLIBC, version ? version : "none");
    ddp_spawn_result_free(&r);
#endif
}

static void probe_libraries(FILE *f)
{
    char text[64];
    int v;
#ifndef __GLIBC__
    /* A static agent cannot dlopen: it cannot see the node's CUDA and NCCL libraries. */
    fact(f, FP_CUDA, "unknown (a static ddpjob-agent cannot load libraries)");
    fact(f, FP_NCCL, "unknown (a static ddpjob-agent cannot load libraries)");
    return;
#endif
    if (library_version("libcuda.so.1", "cuDriverGetVersion", &v) == 0) {
        snprintf(text, sizeof text, "%d.%d", v / 1000, v % 1000 / 10);
        fact(f, FP_CUDA, text);
    } else {
        fact(f, FP_CUDA, "none");
    }
    if (library_version("libnccl.so.2", "ncclGetVersion", &v) == 0) {
        /* NCCL_VERSION_CODE: X*1000+Y*100+Z before 2.9, X*10000+Y*100+Z since. */
        int major = v >= 10000 ? v / 10000 : v / 1000,
            minor = v >= 10000 ? v % 10000 / 100 : v % 1000 / 100;
        snprintf(text, sizeof text, "%d.%d.%d", major, minor, v % 100);
        fact(f, FP_NCCL, text);
    } else {
        fact(f, FP_NCCL, "none");
    }
}

static void probe_infiniband(FILE *f)
{
    char devices[1024] = "";
    DIR *d = opendir("/sys/class/infiniband");
    for (struct dirent *e; d && (e = readdir(d));) {
        if (e->d_name[0] == '.')
            continue;
        size_t n = strlen(devices);
        snprintf(devices + n, sizeof devices - n, "%s%s", n ? " " : "", e->d_name);
    }
    if (d)
        closedir(d);
    fact(f, FP_INFINIBAND, *devices ? devices : "none");
}

/* Every address but loopback's: "eth0 10.0.0.5/24, ib0 192.168.1.5/16". */
static void probe_interfaces(FILE *f)
{
    char list[2048] = "";
    struct ifaddrs *all = NULL;
    if (getifaddrs(&all) == 0) {
        for (struct ifaddrs *i = all; i; i = i->ifa_next) {
            if (!i->ifa_addr || (i->ifa_flags & IFF_LOOPBACK) || !(i->ifa_flags & IFF_UP))
                continue;
            int family = i->ifa_addr->sa_family;
            if (family != AF_INET && family != AF_INET6)
                continue;
            char addr[INET6_ADDRSTRLEN];
            const void *raw = family == AF_INET
                                  ? (const void *)&((struct sockaddr_in *)i->ifa_addr)->sin_addr
                                  : (const void *)&((struct sockaddr_in6 *)i->ifa_addr)->sin6_addr;
            const unsigned char *mask =
                !i->ifa_netmask ? NULL
                : family == AF_INET
                    ? (const unsigned char *)&((struct sockaddr_in *)i->ifa_netmask)->sin_addr
                    : (const unsigned char *)&((struct sockaddr_in6 *)i->ifa_netmask)->sin6_addr;
            int prefix = 0;
            for (int b = 0; mask && b < (family == AF_INET ? 4 : 16); b++)
                prefix += __builtin_popcount(mask[b]);
            inet_ntop(family, raw, addr, sizeof addr);
            size_t n = strlen(list);
            snprintf(list + n, sizeof list - n, "%s%s %s/%d", n ? ", " : "", i->ifa_name, addr,
                     prefix);
        }
        freeifaddrs(all);
    }
    fact(f, FP_INTERFACES, *list ? list : "none");
}

static void probe_environment(FILE *f)
{
    for (char **e = environ; *e; e++) {
        const char *eq = strchr(*e, '=');
        if (!eq || (strncmp(*e, "NCCL_", 5) && strncmp(*e, "CUDA_VISIBLE_DEVICES=", 21)))
            continue;
        char name[128];
        snprintf(name, sizeof name, "$%.*s", (int)(eq - *e), *e);
        fact(f, name, eq + 1);
    }
}

/* The python the command runs, and its torch (read from the installed metadata: importing torch
 * would take seconds). */
/* The container's runtime (its version) and image (size and a digest of its first MiB, which
 * differ when a node holds another copy), so that every node is seen to run the same. */
static void probe_container(FILE *f, const container_t *c)
{
    const container_runtime_info_t *info = container_runtime_info(c->runtime);
    const char *program = info->program;
    char *argv[] = {(char *)program, (char *)info->version_arg, NULL};
    ddp_spawn_result_t r = {0};
    ddp_error_t err = {0};
    char why[512], text[600];
    int ran = ddp_spawn_capture(argv, NULL, PROBE_MS, &r, &err) == 0;
    const char *said = ran && r.status == 0 ? (*r.out ? r.out : r.err) : NULL;
    if (said)
        snprintf(text, sizeof text, "%s %.*s", program, (int)strcspn(said, "\n"), said);
    fact(f, FP_CONTAINER_RUNTIME,
         said ? text : probe_failure(program, ran, &r, &err, why, sizeof why));
    ddp_spawn_result_free(&r);
    struct stat st;
    int fd = open(c->image, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0 || fstat(fd, &st) != 0) {
        snprintf(text, sizeof text, "%s: %s", c->image, strerror(errno));
    } else if (S_ISDIR(st.st_mode)) {
        snprintf(text, sizeof text, "%s: a folder", c->image);
    } else {
        static unsigned char head[1 << 20];
        ssize_t n = read(fd, head, sizeof head);
        unsigned char digest[DDP_SHA256_LEN];
        char hex[2 * DDP_SHA256_LEN + 1];
        ddp_sha256(head, n > 0 ? (size_t)n : 0, digest);
        ddp_hex(digest, 8, hex);
        snprintf(text, sizeof text, "%s: %lld bytes, first MiB %s", c->image, (long long)st.st_size,
                 hex);
    }
    if (fd >= 0)
        close(fd);
    fact(f, FP_CONTAINER_IMAGE, text);
}

static void probe_python(FILE *f, char *const *command, const container_t *c)
{
    const char *base = strrchr(command[0], '/');
    base = base ? base + 1 : command[0];
    if (strncmp(base, "python", 6))
        return;
    char *argv[] = {command[0], "-c",
                    "import sys, importlib.metadata as m\n"
                    "try:\n    t = m.version('torch')\nexcept Exception:\n    t = 'none'\n"
                    "print(sys.version.split()[0], t)",
                    NULL};
    ddp_spawn_result_t r = {0};
    ddp_error_t err = {0};
    char why[512], python[64], torch[64], cwd[4096];
    /* The python the workers run: the image's, in a container. */
    char **contained = c && c->runtime != CONTAINER_NONE && getcwd(cwd, sizeof cwd)
                           ? container_command(c, argv, environ, cwd, NULL, &err)
                           : NULL;
    int ran = ddp_spawn_capture(contained ? contained : argv, NULL, PROBE_MS, &r, &err) == 0;
    container_command_free(contained);
    if (ran && r.status == 0 && sscanf(r.out, "%63s %63s", python, torch) == 2) {
        fact(f, FP_PYTHON, python);
        fact(f, FP_TORCH, torch);
    } else {
        fact(f, FP_PYTHON, probe_failure(command[0], ran, &r, &err, why, sizeof why));
    }
    ddp_spawn_result_free(&r);
}

char *fingerprint_collect(char *const *command, int nproc, const container_t *c)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (!f)
        return NULL;
    char host[256] = "?", workers[16];
    gethostname(host, sizeof host - 1);
    struct utsname u;
    fact(f, FP_HOST, host);
    fact(f, FP_KERNEL, uname(&u) == 0 ? u.release : "?");
    probe_glibc(f);
    probe_gpus(f);
    probe_libraries(f);
    probe_infiniband(f);
    probe_interfaces(f);
    probe_environment(f);
    snprintf(workers, sizeof workers, "%d", nproc);
    fact(f, FP_WORKERS, workers);
    if (c && c->runtime != CONTAINER_NONE)
        probe_container(f, c);
    if (command && command[0])
        probe_python(f, command, c);
    return fclose(f) == 0 ? text : (free(text), NULL);
}

struct fingerprint_probe {
    pid_t pid;
    int fd; /* the child's fingerprint arrives here */
    char *text;
    size_t len;
};

fingerprint_probe_t *fingerprint_start(char *const *command, int nproc, const container_t *c)
{
    fingerprint_probe_t *p = calloc(1, sizeof *p);
    int fds[2];
    if (!p || pipe2(fds, O_CLOEXEC)) {
        free(p);
        return NULL;
    }
    p->pid = fork();
    if (p->pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        char *text = fingerprint_collect(command, nproc, c);
        for (size_t done = 0, len = text ? strlen(text) : 0; done < len;) {
            ssize_t n = write(fds[1], text + done, len - done);
            if (n <= 0)
                break;
            done += (size_t)n;
        }
        _exit(0);
    }
    close(fds[1]);
    if (p->pid < 0) {
        close(fds[0]);
        free(p);
        return NULL;
    }
    p->fd = fds[0];
    fcntl(p->fd, F_SETFL, O_NONBLOCK);
    return p;
}

/* Frees the probe, its child reaped (and first killed, when kill is set). */
static void probe_end(fingerprint_probe_t **probe, int kill_it)
{
    fingerprint_probe_t *p = *probe;
    if (kill_it)
        kill(p->pid, SIGKILL);
    waitpid(p->pid, NULL, 0);
    close(p->fd);
    free(p->text);
    free(p);
    *probe = NULL;
}

char *fingerprint_take(fingerprint_probe_t **probe)
{
    fingerprint_probe_t *p = *probe;
    if (!p)
        return NULL;
    for (;;) {
        char buf[4096];
        ssize_t n = read(p->fd, buf, sizeof buf);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && errno == EAGAIN)
            return NULL;
        if (n <= 0)
            break;
        char *grown = realloc(p->text, p->len + (size_t)n + 1);
        if (!grown)
            break;
        memcpy(grown + p->len, buf, (size_t)n);
        p->text = grown;
        p->len += (size_t)n;
        p->text[p->len] = '\0';
    }
    char *text = p->text ? p->text : strdup("");
    p->text = NULL;
    probe_end(probe, 0);
    return text;
}

void fingerprint_cancel(fingerprint_probe_t **probe)
{
    if (*probe)
        probe_end(probe, 1);
}

int fingerprint_compared(const char *name)
{
    return strcmp(name, FP_HOST) && strcmp(name, FP_INTERFACES) && strcmp(name, FP_WORKERS) &&
           strcmp(name, FP_GPU_COUNT);
}

const char *fingerprint_get(const char *fp, const char *name, char *buf, unsigned size)
{
    size_t n = strlen(name);
    for (const char *line = fp; line && *line;) {
        const char *end = strchr(line, '\n');
        size_t len = end ? (size_t)(end - line) : strlen(line);
        if (len > n && !strncmp(line, name, n) && line[n] == '\t') {
            snprintf(buf, size, "%.*s", (int)(len - n - 1), line + n + 1);
            return buf;
        }
        line = end ? end + 1 : NULL;
    }
    return NULL;
}
