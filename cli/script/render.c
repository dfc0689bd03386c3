#include "cli/script/render.h"

#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/spec/datafile.h"
#include "runtime/job/container_spec.h"
#include "runtime/base/ddp_file.h"
#include "runtime/base/ddp_parse.h"
#include "cli/sched/sched.h"
#include "cli/script/shell_hold.h"
#include "cli/spec/shquote.h"
#include "cli/spec/template.h"

/* The scheduler's template: in $DDPJOB_TEMPLATE_DIR alone when it is set, else installed. */
static char *find_template(const char *file, ddp_error_t *err)
{
    const char *env_dir = getenv("DDPJOB_TEMPLATE_DIR");
    bool from_env = env_dir && *env_dir;
    char *path =
        datafile_find("template", &env_dir, 1, !from_env, "templates", "templates", file, err);
    if (!path) {
        ddp_error_t why = *err;
        ddp_error_set(err, "%s; set DDPJOB_TEMPLATE_DIR or pass --template FILE", why.msg);
    }
    return path;
}

/* {{> name}} in a template: templates/partials/NAME.sh, found as the templates are. */
static char *load_partial(void *arg, const char *name, char **origin, ddp_error_t *err)
{
    (void)arg;
    if (!*name || strspn(name, "abcdefghijklmnopqrstuvwxyz0123456789_-") != strlen(name)) {
        ddp_error_set(err, "{{> %s}}: a partial's name is letters, digits, '_' and '-'", name);
        return NULL;
    }
    char file[256];
    snprintf(file, sizeof file, "partials/%s.sh", name);
    if (!(*origin = find_template(file, err)))
        return NULL;
    char *text = ddp_read_file(*origin, NULL, err);
    if (!text) {
        free(*origin);
        *origin = NULL;
    }
    return text;
}

static int set_quoted(tmpl_ctx_t *ctx, const char *name, const char *value)
{
    char *q = shquote(value);
    int rc = q ? tmpl_set(ctx, name, q) : -1;
    free(q);
    return rc;
}

/* The workload's argv as shell words; a one-string command runs under sh -c, a train: block
 * under the ddp-train at `trainer`. */
static char *quoted_command(const job_spec_t *spec, const char *trainer)
{
    char *out = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&out, &len);
    if (!f)
        return NULL;
    if (spec->command_is_shell)
        fputs("/bin/sh -c ", f);
    if (spec->command_is_train) {
        shquote_write(f, trainer);
        fputc(' ', f);
    }
    for (size_t i = 0; i < spec->command.count; i++) {
        if (i)
            fputc(' ', f);
        shquote_write(f, spec->command.items[i]);
    }
    fclose(f);
    return out;
}

/* The agent's options from the spec's fields (spec_agent_args), as shell words with a blank
 * before each, into the template's `name`. */
static int set_args_of(const job_spec_t *spec, const char *name, tmpl_ctx_t *ctx)
{
    strv_t args;
    if (spec_agent_args(spec, &args))
        return -1;
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    for (size_t i = 0; f && i < args.count; i++) {
        fputc(' ', f);
        shquote_write(f, args.items[i]);
    }
    int rc = f && fclose(f) == 0 ? tmpl_set(ctx, name, text) : -1;
    free(text);
    spec_strv_free(&args);
    return rc;
}

/* {{agent_args}}: every template passes them to every agent, once. {{image_exec_args}}: those
 * with which the agent puts one program in the spec's image (`--container-exec`: a shell on a
 * held node): its own where it runs the container; under pyxis the same image with enroot,
 * pyxis's own runtime, as `ddpjob run` takes it; empty without a container. */
static int set_agent_args(const job_spec_t *spec, tmpl_ctx_t *ctx)
{
    int rc = set_args_of(spec, "agent_args", ctx);
    if (!spec->container.present)
        return rc | tmpl_set(ctx, "image_exec_args", "");
    job_spec_t as_enroot = *spec;
    if (container_runtime_parse(spec->container.runtime) == CONTAINER_PYXIS)
        as_enroot.container.runtime = (char *)container_runtime_name(CONTAINER_ENROOT);
    return rc | set_args_of(&as_enroot, "image_exec_args", ctx);
}

/* Adds path's folder (or path itself, dir_itself) to the comma-separated mounts in f, at its own
 * path, made absolute where it exists here. */
static void add_pyxis_mount(FILE *f, const char *path, bool dir_itself)
{
    char *real = realpath(path, NULL), *copy = strdup(real ? real : path);
    if (copy && copy[0] == '/') {
        char *dir = dir_itself ? copy : dirname(copy);
        fprintf(f, "%s%s", ftell(f) ? "," : "", dir);
    }
    free(copy);
    free(real);
}

/* {{pyxis_image}} and {{pyxis_mounts}}: under pyxis srun starts each agent inside the image, so
 * what the agent reads or writes there is bound at its own path: ddpjob's programs (the agent is
 * static: any image runs it), the spec's folders and mounts; the script adds the working
 * folder, the record and its own. Empty without pyxis. */
static int set_pyxis(const job_spec_t *spec, const char *agent, tmpl_ctx_t *ctx)
{
    bool pyxis = spec->container.present &&
                 container_runtime_parse(spec->container.runtime) == CONTAINER_PYXIS;
    if (!pyxis)
        return tmpl_set(ctx, "pyxis_image", "") | tmpl_set(ctx, "pyxis_mounts", "");
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (!f)
        return -1;
    add_pyxis_mount(f, agent, false);
    if (spec->workdir)
        add_pyxis_mount(f, spec->workdir, true);
    if (spec->log_dir)
        add_pyxis_mount(f, spec->log_dir, true);
    if (spec->error_file)
        add_pyxis_mount(f, spec->error_file, false);
    for (size_t i = 0; i < spec->container.mounts.count; i++)
        fprintf(f, "%s%s", ftell(f) ? "," : "", spec->container.mounts.items[i]);
    int rc = fclose(f) == 0 ? set_quoted(ctx, "pyxis_mounts", text) : -1;
    free(text);
    return rc | set_quoted(ctx, "pyxis_image", spec->container.image);
}

/* Whether the spec's notify.on names `event` (none named: failed and completed). */
static int notify_on(const job_spec_t *spec, const char *event)
{
    if (!spec->notify.on.count)
        return !strcmp(event, "failed") || !strcmp(event, "completed");
    for (size_t i = 0; i < spec->notify.on.count; i++)
        if (!strcmp(spec->notify.on.items[i], event))
            return 1;
    return 0;
}

/* notify: the scheduler's mail, in its words (none without one: a node script), and whether the
 * batch shell starts `ddpjob notify` for the webhook (its URL stays in the record). */
static int fill_notify(const job_spec_t *spec, const sched_ops_t *ops, tmpl_ctx_t *ctx)
{
    char events[64] = "";
    if (ops && spec->notify.email)
        ops->mail_events(notify_on(spec, "failed"), notify_on(spec, "completed"),
                         notify_on(spec, "requeued"), events, sizeof events);
    int rc = tmpl_set(ctx, "mail_user", events[0] ? spec->notify.email : "");
    rc |= tmpl_set(ctx, "mail_events", events);
    return rc | tmpl_set_bool(ctx, "notify_webhook", spec->notify.webhook != NULL);
}

static int fill_common(const job_spec_t *spec, const char *bindir, const char *agent,
                       const char *trainer, tmpl_ctx_t *ctx)
{
    int rc = 0;
    rc |= tmpl_set(ctx, "version", DDPJOB_VERSION);
    rc |= tmpl_set(ctx, "name", spec->name);
    rc |= set_quoted(ctx, "name_quoted", spec->name);
    rc |= tmpl_setf(ctx, "nodes", "%ld", spec->nodes);
    /* Spares: the scheduler allocates them too, and their agents stand by (--spares). */
    rc |= tmpl_setf(ctx, "alloc_nodes", "%ld", spec_alloc_nodes(spec));
    rc |=
        spec->spares ? tmpl_setf(ctx, "spares", "%ld", spec->spares) : tmpl_set(ctx, "spares", "");
    rc |= tmpl_setf(ctx, "procs_per_node", "%ld", spec->procs_per_node);
    rc |= spec->master_port ? tmpl_setf(ctx, "master_port", "%ld", spec->master_port)
                            : tmpl_set(ctx, "master_port", "");
    rc |= tmpl_set(ctx, "queue", spec->queue ? spec->queue : "");
    rc |= tmpl_set(ctx, "project", spec->project ? spec->project : "");

    rc |= tmpl_set_bool(ctx, "has_modules", spec->modules.count > 0);
    rc |= tmpl_declare_list(ctx, "modules");
    for (size_t i = 0; i < spec->modules.count; i++) {
        tmpl_ctx_t *item = tmpl_add_item(ctx, "modules");
        rc |= item ? set_quoted(item, "module", spec->modules.items[i]) : -1;
    }
    /* Block scalars end with a newline; the template puts setup on a line of its own. */
    char *setup = strdup(spec->setup ? spec->setup : "");
    if (!setup)
        return -1;
    size_t n = strlen(setup);
    while (n > 0 && setup[n - 1] == '\n')
        setup[--n] = '\0';
    rc |= tmpl_set(ctx, "setup", setup);
    free(setup);

    rc |= tmpl_declare_list(ctx, "env");
    for (size_t i = 0; i < spec->env_count; i++) {
        tmpl_ctx_t *item = tmpl_add_item(ctx, "env");
        rc |= item ? tmpl_set(item, "key", spec->env[i].key) : -1;
        rc |= item ? set_quoted(item, "value", spec->env[i].value) : -1;
    }
    rc |= spec->workdir ? set_quoted(ctx, "workdir", spec->workdir) : tmpl_set(ctx, "workdir", "");
    rc |= set_agent_args(spec, ctx);
    rc |= tmpl_set_bool(ctx, "own_log_dir", spec->log_dir != NULL);
    rc |= tmpl_set_bool(ctx, "own_error_file", spec->error_file != NULL);

    /* The walltime contract: the agent's side of it, and whether a requeued train: run resumes. */
    rc |= spec->walltime_s
              ? tmpl_setf(ctx, "walltime_s", "%llu", (unsigned long long)spec->walltime_s)
              : tmpl_set(ctx, "walltime_s", "");
    rc |= tmpl_set(ctx, "checkpoint_signal",
                   spec->checkpoint.signal ? ddp_signal_name(spec->checkpoint.signal) : "");
    rc |= tmpl_setf(ctx, "checkpoint_before_s", "%ld", spec->checkpoint.before_s);
    rc |= spec->requeue ? tmpl_setf(ctx, "requeue", "%ld", spec->requeue)
                        : tmpl_set(ctx, "requeue", "");
    rc |= tmpl_set_bool(ctx, "train_resumes",
                        spec->command_is_train && spec->requeue &&
                            !spec_command_has(spec, "--resume"));

    char *command = quoted_command(spec, trainer);
    rc |= command ? tmpl_set(ctx, "command", command) : -1;
    free(command);

    char *path = NULL;
    rc |= asprintf(&path, "%s/ddpjob", bindir) < 0 ? -1 : set_quoted(ctx, "ddpjob", path);
    free(path);
    rc |= set_quoted(ctx, "agent", agent);
    rc |= set_pyxis(spec, agent, ctx);
    return rc ? -1 : 0;
}

/* Where one of our programs is: in bindir when given; else beside this ddpjob when installed,
 * or in its build folder (`built_in`, relative to cli/) when ddpjob runs from the build tree.
 * NULL when out of memory. */
static char *program_path(const char *bindir, const char *self, const char *name,
                          const char *built_in)
{
    char *path = NULL;
    if (asprintf(&path, "%s/%s", bindir ? bindir : self, name) < 0)
        return NULL;
    if (bindir)
        return path;
    if (access(path, X_OK) != 0) {
        free(path);
        if (asprintf(&path, "%s/../%s/%s", self, built_in, name) < 0)
            return NULL;
    }
    /* Without "..": a container that binds the program's folder has no cli/ to climb out of. */
    char *real = realpath(path, NULL);
    if (!real)
        return path;
    free(path);
    return real;
}

/* Renders `template_file` (or template_path) with the common variables and, for a scheduler,
 * its own (ops; NULL for the node script, which over_ssh says where it runs). node_script: the
 * node script a job script carries for `ddpjob launch --node-script`, or NULL. */
static int render_with(const job_spec_t *spec, const sched_ops_t *ops, const char *template_file,
                       const char *template_path_arg, const char *bindir_arg, bool over_ssh,
                       const char *node_script, const render_opts_t *opts, FILE *out, FILE *notes,
                       ddp_error_t *err)
{
    char *template_path = NULL, *text = NULL, *self = NULL, *agent = NULL, *trainer = NULL;
    tmpl_ctx_t *ctx = NULL;
    int rc = -1;
    template_path =
        template_path_arg ? strdup(template_path_arg) : find_template(template_file, err);
    if (!template_path)
        goto out;
    if (!(text = ddp_read_file(template_path, NULL, err))) {
        ddp_error_prefix(err, "template");
        goto out;
    }
    if (!bindir_arg && !(self = datafile_self_dir(err)))
        goto out;
    const char *bindir = bindir_arg ? bindir_arg : self;
    if (!(agent = program_path(bindir_arg, self, "ddpjob-agent", "agent")) ||
        !(trainer = program_path(bindir_arg, self, "ddp-train", "runtime/train"))) {
        ddp_error_set(err, "out of memory");
        goto out;
    }
    ctx = tmpl_ctx_create();
    char script_file[256] = "";
    if (ops)
        sched_script_file(ops, spec, script_file, sizeof script_file);
    if (!ctx || fill_common(spec, bindir, agent, trainer, ctx) < 0 ||
        fill_notify(spec, ops, ctx) < 0 || set_quoted(ctx, "script_file", script_file) < 0 ||
        tmpl_set(ctx, "hold_dir_function", shell_hold_dir_function) < 0 ||
        tmpl_set_bool(ctx, "over_ssh", over_ssh) < 0 ||
        set_quoted(ctx, "node_script", node_script ? node_script : "") < 0 ||
        tmpl_set_bool(ctx, "hold", opts && opts->hold) < 0 ||
        tmpl_setf(ctx, "hold_idle_s", "%lld", opts && opts->hold ? opts->idle_s : 0) < 0 ||
        tmpl_set_bool(ctx, "held_run", opts && opts->held_run) < 0 ||
        tmpl_set_bool(ctx, "hold_pack", opts && opts->hold && opts->pack_parallel > 0) < 0 ||
        tmpl_setf(ctx, "hold_parallel", "%d", opts ? opts->pack_parallel : 0) < 0 ||
        tmpl_set_bool(ctx, "pipeline_stage", opts && opts->pipeline) < 0 ||
        set_quoted(ctx, "pipeline_record", opts && opts->pipeline ? opts->pipeline : "") < 0 ||
        (ops && ops->fill(spec, ctx) < 0)) {
        ddp_error_set(err, "out of memory");
        goto out;
    }
    const tmpl_partials_t partials = {load_partial, NULL};
    if (tmpl_render(text, template_path, ctx, &partials, out, err) < 0)
        goto out;
    if (ops)
        ops->note_ignored(spec, notes);
    rc = 0;
out:
    tmpl_ctx_destroy(ctx);
    free(template_path);
    free(text);
    free(self);
    free(agent);
    free(trainer);
    return rc;
}

int render_script(const job_spec_t *spec, const render_opts_t *opts, FILE *out, FILE *notes,
                  ddp_error_t *err)
{
    const sched_ops_t *ops = opts->sched;
    if (!ops)
        return ddp_error_set(err, "no scheduler chosen");
    if (opts->hold || opts->held_run)
        if (ops->no_hold_why)
            return ddp_error_set(err, "%s", ops->no_hold_why);
    char *node_script = NULL;
    size_t node_script_len = 0;
    if (ops->needs_node_script && ops->needs_node_script(spec)) {
        FILE *f = open_memstream(&node_script, &node_script_len);
        if (!f)
            return ddp_error_set(err, "out of memory");
        int rc = render_node_script(spec, opts->bindir, true, f, err);
        fclose(f);
        if (rc) {
            free(node_script);
            return -1;
        }
    }
    int rc = render_with(spec, ops, ops->template_file, opts->template_path, opts->bindir, false,
                         node_script, opts, out, notes, err);
    free(node_script);
    return rc;
}

int render_node_script(const job_spec_t *spec, const char *bindir, bool over_ssh, FILE *out,
                       ddp_error_t *err)
{
    return render_with(spec, NULL, "node.sh", NULL, bindir, over_ssh, NULL, NULL, out, NULL, err);
}
