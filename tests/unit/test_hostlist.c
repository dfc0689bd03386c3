#include <stdlib.h>

#include "runtime/job/hostlist.h"
#include "tests/unit/tap.h"

/* The hosts joined with spaces (each as LINE:HOST when with_lines), or "ERR: message". */
static char *join_hosts(const ddp_hostlist_t *hl, const ddp_error_t *err, int with_lines)
{
    char *out = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&out, &len);
    if (!hl)
        fprintf(f, "ERR: %s", err->msg);
    for (size_t i = 0; hl && i < hl->count; i++) {
        fprintf(f, "%s", i ? " " : "");
        if (with_lines)
            fprintf(f, "%zu:", hl->first_line[i]);
        fprintf(f, "%s", hl->hosts[i]);
    }
    fclose(f);
    return out;
}

static char *expand(const char *expr)
{
    ddp_error_t err;
    ddp_hostlist_t *hl = ddp_hostlist_expand(expr, &err);
    char *out = join_hosts(hl, &err, 0);
    ddp_hostlist_destroy(hl);
    return out;
}

static void check_expand(const char *expr, const char *want)
{
    char *got = expand(expr);
    is_str(got, want, "expand %s", expr);
    free(got);
}

static void check_error(const char *expr, const char *fragment)
{
    char *got = expand(expr);
    ok(!strncmp(got, "ERR: ", 5) && strstr(got, fragment), "%s is an error mentioning \"%s\" (%s)",
       expr, fragment, got);
    free(got);
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The expansion's hosts, sorted and joined: compression may reorder within a group. */
static char *expand_sorted(const char *expr)
{
    char *joined = expand(expr);
    char *words[64];
    size_t n = 0;
    for (char *w = strtok(joined, " "); w && n < 64; w = strtok(NULL, " "))
        words[n++] = w;
    qsort(words, n, sizeof *words, cmp_str);
    char *out = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&out, &len);
    for (size_t i = 0; i < n; i++)
        fprintf(f, "%s%s", i ? " " : "", words[i]);
    fclose(f);
    free(joined);
    return out;
}

static void check_compress(const char *expr, const char *want)
{
    ddp_error_t err;
    ddp_hostlist_t *hl = ddp_hostlist_expand(expr, &err);
    char *got = hl ? ddp_hostlist_compress(hl) : NULL;
    is_str(got, want, "compress %s", expr);
    /* And back again: the compressed form expands to the same hosts. */
    if (got) {
        char *a = expand_sorted(expr), *b = expand_sorted(got);
        is_str(b, a, "round trip of %s gives the same hosts", expr);
        free(a);
        free(b);
    }
    free(got);
    ddp_hostlist_destroy(hl);
}

static void check_nodefile(const char *text, const char *want)
{
    ddp_error_t err;
    ddp_hostlist_t *hl = ddp_hostlist_from_nodefile_text(text, "nodefile", &err);
    char *out = join_hosts(hl, &err, 1);
    is_str(out, want, "nodefile %s", want);
    free(out);
    ddp_hostlist_destroy(hl);
}

int main(void)
{
    check_expand("gpu[01-04,07]", "gpu01 gpu02 gpu03 gpu04 gpu07");
    check_expand("a[1-2]-b[01-02]", "a1-b01 a1-b02 a2-b01 a2-b02");
    check_expand("n1,n[3-5],login", "n1 n3 n4 n5 login");
    check_expand("n[08-10]", "n08 n09 n10");
    check_expand("n[8-10]", "n8 n9 n10");
    check_expand("n[098-101]", "n098 n099 n100 n101");
    check_expand("single", "single");
    check_expand("n[1-3],n2,n1", "n1 n2 n3");
    check_expand("rack[1-2]n[1-2].cluster", "rack1n1.cluster rack1n2.cluster rack2n1.cluster "
                                            "rack2n2.cluster");
    check_expand("x[5]", "x5");

    check_error("n[3-1]", "backwards");
    check_error("n[", "without");
    check_error("n]", "without");
    check_error("", "empty");
    check_error("n1,,n2", "empty host");
    check_error("n[1-a]", "bad range");
    check_error("n[]", "bad range");
    check_error("n[1-2,]", "bad range");
    check_error("n[[1]]", "nested");
    check_error("n[1-99999999]", "more than");
    check_error("a b", "blank");

    check_compress("n1,n3,n4,n5,login", "n[1,3-5],login");
    check_compress("gpu[01-04,07]", "gpu[01-04,07]");
    check_compress("n5,n3,n4", "n[3-5]");
    check_compress("login", "login");
    check_compress("a1-b01,a1-b02,a2-b01", "a1-b[01-02],a2-b01");
    check_compress("n1,n01", "n1,n01");
    check_compress("b2,a1,x,b1,a2,n01,n1,n02", "b[1-2],a[1-2],x,n[01-02],n1");
    check_compress("c3,c1,c3", "c[1,3]");

    check_nodefile("g1\ng1\ng1\ng2\ng2\ng2\n", "0:g1 3:g2");
    check_nodefile("  g2.gadi \n\ng1\ng2.gadi\n", "0:g2.gadi 1:g1");
    check_nodefile("\n \n", "ERR: nodefile: no host names in node file");
    check_nodefile("a b\n", "ERR: nodefile:1: expected one host name per line, got \"a b\"");

    ddp_error_t err;
    ddp_hostlist_t *hl = ddp_hostlist_expand("gpu1.cluster,gpu2", &err);
    ok(ddp_hostlist_find(hl, "gpu1") == 0, "short name finds the FQDN entry");
    ok(ddp_hostlist_find(hl, "gpu2.cluster") == 1, "FQDN finds the short entry");
    ok(ddp_hostlist_find(hl, "gpu") == -1, "a prefix is not a match");
    ok(ddp_hostlist_find(hl, "gpu1.other") == -1, "two different domains do not match");
    ddp_hostlist_destroy(hl);

    hl = ddp_hostlist_from_nodefile("/nonexistent/nodefile", &err);
    ok(!hl && strstr(err.msg, "/nonexistent/nodefile: No such file"), "missing node file: %s",
       err.msg);
    return done_testing();
}
