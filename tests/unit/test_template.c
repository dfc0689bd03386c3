#include <stdlib.h>
#include <string.h>

#include "tests/unit/tap.h"
#include "cli/spec/template.h"

/* The partials the tests include, by name. */
static char *load_test_partial(void *arg, const char *name, char **origin, ddp_error_t *err)
{
    (void)arg;
    static const char *const partials[][2] = {
        {"greet", "hello {{name}}\n"},
        {"block", "a\n{{#yes}}\nb {{name}}\n\n{{/yes}}\n"},
        {"self", "x {{> self}}"},
        {"typo", "ok\n{{nmae}}\n"},
    };
    for (size_t i = 0; i < sizeof partials / sizeof partials[0]; i++)
        if (!strcmp(name, partials[i][0])) {
            if (asprintf(origin, "%s.partial", name) < 0)
                return NULL;
            return strdup(partials[i][1]);
        }
    ddp_error_set(err, "no partial \"%s\"", name);
    return NULL;
}

static const tmpl_partials_t test_partials = {load_test_partial, NULL};

static char *render(const char *text, const tmpl_ctx_t *ctx, char *errbuf, size_t errsize)
{
    char *out = NULL;
    size_t len = 0;
    ddp_error_t err = {0};
    FILE *f = open_memstream(&out, &len);
    int rc = tmpl_render(text, "t.tmpl", ctx, &test_partials, f, &err);
    fclose(f);
    snprintf(errbuf, errsize, "%s", err.msg);
    if (rc < 0) {
        free(out);
        return NULL;
    }
    return out;
}

static void check(const char *text, const tmpl_ctx_t *ctx, const char *want, const char *what)
{
    char err[1024];
    char *got = render(text, ctx, err, sizeof err);
    is_str(got, want, "%s", what);
    if (!got)
        printf("#   error: %s\n", err);
    free(got);
}

static void check_error(const char *text, const tmpl_ctx_t *ctx, const char *want_err)
{
    char err[1024];
    char *got = render(text, ctx, err, sizeof err);
    ok(!got, "render fails for %s", want_err);
    is_str(err, want_err, "error message");
    free(got);
}

int main(void)
{
    tmpl_ctx_t *ctx = tmpl_ctx_create();
    tmpl_set(ctx, "name", "job1");
    tmpl_set(ctx, "empty", "");
    tmpl_set_bool(ctx, "yes", true);
    tmpl_declare_list(ctx, "none");
    for (int i = 0; i < 3; i++) {
        tmpl_ctx_t *item = tmpl_add_item(ctx, "mods");
        tmpl_setf(item, "mod", "m%d", i);
    }

    check("hi {{name}}!\n", ctx, "hi job1!\n", "variable");
    check("{{ name }}", ctx, "job1", "blanks inside the tag");
    check("a\n{{#yes}}\nB\n{{/yes}}\nc\n", ctx, "a\nB\nc\n", "standalone section lines vanish");
    check("a\n{{#empty}}\nB\n{{/empty}}\nc\n", ctx, "a\nc\n", "false section");
    check("{{^empty}}none{{/empty}}", ctx, "none", "inverted section");
    check("{{#mods}}\nload {{mod}} for {{name}}\n{{/mods}}\n", ctx,
          "load m0 for job1\nload m1 for job1\nload m2 for job1\n", "list with outer lookup");
    check("[{{#none}}x{{/none}}]", ctx, "[]", "empty list");
    check("[{{^none}}x{{/none}}]", ctx, "[x]", "inverted empty list");
    check("a {{! a comment\n spanning lines }}b", ctx, "a b", "comment");
    check("  {{#yes}}  \nX\n  {{/yes}}\n", ctx, "X\n", "indented standalone tags");
    check("x {{#yes}}y{{/yes}} z\n", ctx, "x y z\n", "inline section keeps its line");

    check("[{{> greet}}]", ctx, "[hello job1\n]", "inline partial");
    check("f() {\n    {{> block}}\n}\n", ctx, "f() {\n    a\n    b job1\n\n}\n",
          "a partial on its own line takes its indentation, blank lines left blank");
    check("{{#empty}}\n{{> greet}}\n{{/empty}}\n", ctx, "", "a partial in a section not taken");

    check_error("x\n{{> nope}}\n", ctx, "t.tmpl:2: no partial \"nope\"");
    check_error("{{> typo}}", ctx, "typo.partial:2: unknown variable \"nmae\"");
    check_error("{{> self}}", ctx, "self.partial:1: {{> self}}: partials nested more than 8 deep");
    check_error("line1\n{{nmae}}\n", ctx, "t.tmpl:2: unknown variable \"nmae\"");
    check_error("{{#empty}}{{typo}}{{/empty}}", ctx, "t.tmpl:1: unknown variable \"typo\"");
    check_error("{{#yes}}\n\nx\n", ctx, "t.tmpl:1: {{#yes}} is never closed");
    check_error("{{/yes}}", ctx, "t.tmpl:1: {{/yes}} closes no section");
    check_error("{{#yes}}{{/name}}", ctx, "t.tmpl:1: {{/name}} closes {{#yes}} from line 1");
    check_error("a\nb {{name\n}}", ctx, "t.tmpl:2: \"{{\" without \"}}\"");
    check_error("{{mods}}", ctx, "t.tmpl:1: \"mods\" is a list; use {{#mods}}");
    check_error("{{}}", ctx, "t.tmpl:1: empty tag");
    tmpl_ctx_destroy(ctx);
    return done_testing();
}
