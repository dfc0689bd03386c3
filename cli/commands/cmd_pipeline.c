/* pipeline: a file of stages (cli/spec/pipeline.h) as the commands take it. This step: validate
 * (every problem of the file and of each stage's spec, the order the stages go in). */
#include <stdio.h>
#include <string.h>

#include "cli/commands/commands.h"
#include "cli/spec/pipeline.h"

static void print_problems(const diag_t *d)
{
    for (size_t i = 0; d && i < d->count; i++)
        fprintf(stderr, "%s\n", d->lines[i]);
}

/* Stage s's spec loaded as its job would be (its set: applied): EXIT_OK or the loader's code. A
 * spec asking values of other stages is loaded when they are known, as the stage starts. */
static int check_stage_spec(const pipeline_stage_t *s, const load_opts_t *load)
{
    if (s->asks_values)
        return EXIT_OK;
    load_opts_t one = {.sched = load->sched, .site = load->site, .validating = true};
    for (size_t k = 0; k < s->nsets; k++)
        load_opts_add_set(&one, s->sets[k]);
    sched_kind_t target;
    int code = EXIT_OK;
    job_spec_t *spec = load_for_scheduler(s->path, &one, &target, NULL, &code);
    spec_destroy(spec);
    load_opts_free(&one);
    return spec ? EXIT_OK : code;
}

int pipeline_validate(const char *path, const load_opts_t *load)
{
    pipeline_t p;
    diag_t *diag = diag_create(path);
    size_t problems = diag ? pipeline_read(path, &p, diag) : 1;
    print_problems(diag);
    for (size_t i = 0; diag && i < p.nstages; i++)
        print_problems(p.stages[i].spec_diag);
    int worst = problems ? EXIT_INVALID_SPEC : EXIT_OK;
    for (size_t k = 0; !problems && k < p.nstages; k++) {
        int code = check_stage_spec(&p.stages[p.order[k]], load);
        worst = code > worst ? code : worst;
    }
    if (worst == EXIT_OK) {
        printf("%s: ok: pipeline %s of %zu stage(s):", path, p.name, p.nstages);
        for (size_t k = 0; k < p.nstages; k++) {
            const pipeline_stage_t *s = &p.stages[p.order[k]];
            printf("%s %s (%s", k ? "," : "", s->name, s->spec);
            static const char *const words[] = {"ok", "any", "notok"};
            for (int kind = 0; kind < STAGE_AFTER_KINDS; kind++)
                for (size_t a = 0; a < s->nafter[kind]; a++)
                    printf(", after %s %s", p.stages[s->after[kind][a]].name, words[kind]);
            printf("%s)",
                   s->asks_values ? "; its values, and with them its spec, when it starts" : "");
        }
        printf("\n");
    }
    if (diag)
        pipeline_free(&p);
    diag_destroy(diag);
    return worst;
}
