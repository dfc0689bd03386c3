#include "cli/view/job_view.h"

#include <glob.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "runtime/base/ddp_file.h"
#include "cli/jobs/dev_record.h"
#include "cli/jobs/job_output.h"
#include "cli/jobs/json_doc.h"
#include "cli/view/pending_reason.h"
#include "cli/jobs/term_text.h"

/* ---- the agents' failure reports ------------------------------------------------------- */

static void add_failed(job_view_t *v, json_doc_t *doc, const json_t *m)
{
    const char *rank = json_text(doc, m, "rank"), *what = json_text(doc, m, "what");
    if (!rank || !what)
        return;
    failed_rank_t *more = realloc(v->failed, (size_t)(v->nfailed + 1) * sizeof *more);
    if (!more)
        return;
    v->failed = more;
    failed_rank_t *f = &v->failed[v->nfailed++];
    const char *node = json_text(doc, m, "node"), *host = json_text(doc, m, "host"),
               *code = json_text(doc, m, "exit_code");
    f->rank = atoi(rank);
    f->node = node ? atoi(node) : -1;
    f->exit_code = code ? atoi(code) : -1;
    const char *cause = json_text(doc, m, "cause");
    f->out_of_memory = cause && !strcmp(cause, "out_of_memory");
    f->gpu_out_of_memory = cause && !strcmp(cause, "gpu_out_of_memory");
    f->consequence = cause && !strcmp(cause, "consequence");
    snprintf(f->host, sizeof f->host, "%s", host ? host : "");
    snprintf(f->cause, sizeof f->cause, "%s", what);
}

/* The causes first, then the failures they brought on; by rank within each. */
static int cause_first(const void *a, const void *b)
{
    const failed_rank_t *x = a, *y = b;
    if (x->consequence != y->consequence)
        return x->consequence - y->consequence;
    return (x->rank > y->rank) - (x->rank < y->rank);
}

/* Reads the JSON file at path and hands its root to take; a file cut short (its node died while
 * writing) does not parse and is passed over. */
static void read_json(job_view_t *v, const char *path,
                      void (*take)(job_view_t *, json_doc_t *, const json_t *))
{
    ddp_error_t err;
    size_t len;
    char *text = ddp_read_file_max(path, JSON_DOC_MAX_BYTES, &len, &err);
    json_doc_t doc;
    if (text && json_doc_parse(&doc, text, len) == 0) {
        take(v, &doc, json_root(&doc));
        json_doc_free(&doc);
    }
    free(text);
}

/* Whether rank is among the failed ones already (every node's report names the first failure). */
static int rank_listed(const job_view_t *v, int rank)
{
    for (int i = 0; i < v->nfailed; i++)
        if (v->failed[i].rank == rank)
            return 1;
    return 0;
}

/* One agent's failure report (--error-file). A rank the agent named without its own exit (one
 * stalled or hung, stopped by the agent) is in its first failure, not among its failed ranks. */
static void take_report(job_view_t *v, json_doc_t *doc, const json_t *root)
{
    const json_t *first = json_child(root, "first_failure");
    const char *first_cause = json_text(doc, first, "cause");
    if (first_cause && !strcmp(first_cause, "out_of_memory"))
        v->killed_for_memory = 1;
    const char *first_kind = json_text(doc, first, "kind"),
               *first_node = json_text(doc, first, "node");
    if (first_kind && !strcmp(first_kind, "lost") && first_node && atoi(first_node) > 0) {
        const char *host = json_text(doc, first, "host"), *what = json_text(doc, first, "what");
        v->node_lost = atoi(first_node);
        snprintf(v->lost_host, sizeof v->lost_host, "%s", host ? host : "");
        snprintf(v->lost_what, sizeof v->lost_what, "%s", what ? what : "");
    }
    const json_t *ranks = json_child(root, "failed_ranks");
    for (size_t i = 0; i < json_items(ranks); i++)
        add_failed(v, doc, json_item(ranks, i));
}

/* An agent's first failure, where it has no failed rank of its own and no agent's report has
 * listed that rank (node 0 names a rank of another node that failed first, which that node's
 * report lists with its own findings). */
static void take_first_failure(job_view_t *v, json_doc_t *doc, const json_t *root)
{
    const json_t *first = json_child(root, "first_failure");
    const char *first_rank = json_text(doc, first, "rank");
    if (!json_items(json_child(root, "failed_ranks")) && first_rank && atoi(first_rank) >= 0 &&
        !rank_listed(v, atoi(first_rank)))
        add_failed(v, doc, first);
}

static void read_reports(job_view_t *v)
{
    char pattern[8192];
    snprintf(pattern, sizeof pattern, "%s/link-%d/error-node*.json", v->rec.dir, v->link);
    glob_t g;
    if (glob(pattern, 0, NULL, &g) == 0) {
        for (size_t i = 0; i < g.gl_pathc; i++)
            read_json(v, g.gl_pathv[i], take_report);
        for (size_t i = 0; i < g.gl_pathc; i++)
            read_json(v, g.gl_pathv[i], take_first_failure);
    }
    globfree(&g);
    if (v->nfailed > 1)
        qsort(v->failed, (size_t)v->nfailed, sizeof *v->failed, cause_first);
}

/* Node 0's report of every rank's last step (the agent's --progress-file). */
static void take_progress(job_view_t *v, json_doc_t *doc, const json_t *root)
{
    const json_t *ranks = json_child(root, "ranks");
    const char *when = json_text(doc, root, "time");
    size_t n = json_items(ranks);
    if (!n || !(v->last_steps = calloc(n, sizeof *v->last_steps)))
        return;
    v->nsteps = (int)n;
    for (size_t r = 0; r < n; r++) {
        const char *step = json_text(doc, json_item(ranks, r), "step");
        v->last_steps[r] = step ? atoll(step) : -1;
    }
    snprintf(v->steps_time, sizeof v->steps_time, "%s", when ? when : "");
    const json_t *changes = json_child(root, "membership");
    size_t k = json_items(changes);
    if (!k || !(v->changes = calloc(k, sizeof *v->changes)))
        return;
    for (size_t i = 0; i < k; i++) {
        const json_t *c = json_item(changes, i);
        node_change_t *x = &v->changes[v->nchanges++];
        const char *attempt = json_text(doc, c, "attempt"), *node = json_text(doc, c, "node");
        const char *host = json_text(doc, c, "host"), *was = json_text(doc, c, "in_place_of");
        const char *after = json_text(doc, c, "after");
        x->attempt = attempt ? atoi(attempt) : -1;
        x->node = node ? atoi(node) : -1;
        snprintf(x->host, sizeof x->host, "%s", host ? host : "?");
        snprintf(x->in_place_of, sizeof x->in_place_of, "%s", was ? was : "");
        snprintf(x->after, sizeof x->after, "%s", after ? after : "");
    }
}

static void read_progress(job_view_t *v)
{
    char path[8192];
    snprintf(path, sizeof path, "%s/link-%d/progress.json", v->rec.dir, v->link);
    read_json(v, path, take_progress);
}

/* A batch.log is its two writers' first MiB each (templates/partials/job_record.sh). */
#define BATCH_LOG_MAX (4u << 20)

/* The last JOB_VIEW_BATCH_LINES lines of link-K/batch.log that hold more than blanks. */
static void read_batch_tail(job_view_t *v)
{
    char path[8192];
    snprintf(path, sizeof path, "%s/link-%d/batch.log", v->rec.dir, v->link);
    ddp_error_t err;
    size_t len;
    char *text = ddp_read_file_max(path, BATCH_LOG_MAX, &len, &err);
    if (!text)
        return;
    char *end = text + len;
    while (end > text && v->nbatch_tail < JOB_VIEW_BATCH_LINES) {
        char *line_end = end;
        while (line_end > text && line_end[-1] == '\n')
            line_end--;
        char *start = line_end;
        while (start > text && start[-1] != '\n')
            start--;
        end = start;
        if (start[strspn(start, " \t\r")] == '\n' || start == line_end)
            continue;
        char *line = strndup(start, (size_t)(line_end - start));
        if (!line)
            break;
        memmove(v->batch_tail + 1, v->batch_tail, (size_t)v->nbatch_tail * sizeof *v->batch_tail);
        v->batch_tail[0] = line;
        v->nbatch_tail++;
    }
    free(text);
}

/* ---- the state ------------------------------------------------------------------------- */

const char *job_view_id(const job_view_t *v)
{
    return v->link < v->rec.nlinks ? v->rec.links[v->link].id : "";
}

/* The state a signal from outside gave the link, as its batch shell wrote it (job_record.h):
 * "sched=WORD" in the words of the job's scheduler. */
static job_state_t state_ended_by(const job_view_t *v, const char *by)
{
    if (!strncmp(by, "sched=", 6)) {
        const sched_ops_t *ops = sched_by_name(v->rec.scheduler);
        job_state_t s = ops && ops->state_from_word ? ops->state_from_word(by + 6) : JOB_UNKNOWN;
        return job_state_final(s) ? s : JOB_UNKNOWN;
    }
    if (!strcmp(by, "walltime"))
        return JOB_TIMEOUT;
    return !strcmp(by, "signal") ? JOB_CANCELLED : JOB_UNKNOWN;
}

/* The elapsed time: the scheduler's, else the current link's from its record. */
static void decide_elapsed(job_view_t *v, const job_link_t *l)
{
    /* The scheduler's word on a held run is its allocation's, whose time is not the run's. */
    if (v->sched.elapsed[0] && !v->rec.held_in[0]) {
        snprintf(v->elapsed, sizeof v->elapsed, "%s", v->sched.elapsed);
    } else if (l && l->started && (l->ended || !job_state_final(v->state))) {
        long long s = (l->ended ? l->end_time : (int64_t)time(NULL)) - l->start_time;
        s = s < 0 ? 0 : s;
        snprintf(v->elapsed, sizeof v->elapsed, "%02lld:%02lld:%02lld", s / 3600, s / 60 % 60,
                 s % 60);
    }
}

/* A run in a held allocation that has not ended: waiting for the holder, or going, while the
 * allocation lives; cancelled with it when it ended before the run started. */
static void decide_held_run(job_view_t *v, const job_link_t *l)
{
    int started = l && l->started;
    if (v->allocation_alive)
        v->state = v->rec.cancelled && !started ? JOB_CANCELLED
                   : started                    ? JOB_RUNNING
                                                : JOB_PENDING;
    else if (!started && (v->sched.found || v->rec.cancelled))
        v->state = JOB_CANCELLED;
}

/* A held run's link that ended: its holder's word on it decides (link-K/holder). Until the holder
 * has taken the end, the run goes on; one it asked again, its node lost, waits for its next link
 * while the allocation lives; a node lost under it is the cause of its end. A cancelled run is
 * never asked again: its end is final without the holder's word (which a holder cancelled with
 * it may never write). */
static void decide_held_end(job_view_t *v, const job_link_t *l)
{
    if (v->rec.cancelled)
        return;
    if (v->allocation_alive && (!l->holder_took || l->asked_again)) {
        v->state = l->holder_took ? JOB_PENDING : JOB_RUNNING;
        v->exit_status = -1;
    } else if (l->lost_host[0] && !v->rec.cancelled) {
        v->state = JOB_NODE_FAILURE;
    }
}

void job_view_decide(job_view_t *v)
{
    const job_link_t *l = v->link < v->rec.nlinks ? &v->rec.links[v->link] : NULL;
    int has_successor = v->link + 1 < v->rec.nlinks;
    v->exit_status = -1;
    v->state = JOB_UNKNOWN;
    if (!v->sched.found && l && l->kept) {
        /* What was decided while the scheduler still knew the job, kept since. */
        v->state = l->kept_state;
        v->exit_status = l->kept_exit;
        v->source = "record";
        decide_elapsed(v, l);
        return;
    }
    if (v->sched.found) {
        v->state = v->sched.state;
        v->exit_status = v->sched.exit_status;
        v->source = v->sched.source;
    }
    if (l && l->ended &&
        (!v->sched.found || v->state == JOB_COMPLETED || v->state == JOB_FAILED ||
         v->state == JOB_REQUEUED)) {
        v->state = job_state_from_exit(l->status, has_successor, v->rec.cancelled);
        if (!v->sched.found && state_ended_by(v, l->ended_by) != JOB_UNKNOWN)
            v->state = state_ended_by(v, l->ended_by);
        v->exit_status = l->status;
        if (!v->sched.found)
            v->source = "record";
    }
    /* 128 + SIGKILL is some PBS installs' word for a qdel, and a batch script's status when a
     * worker was killed by SIGKILL: the agents' report of a failed rank tells them apart. */
    if (v->state == JOB_CANCELLED && !v->rec.cancelled && v->exit_status == 128 + 9 && v->nfailed)
        v->state = JOB_FAILED;
    if (v->rec.cancelled && job_state_final(v->state) && v->state != JOB_COMPLETED)
        v->state = JOB_CANCELLED;
    /* Where the scheduler saw only a failure, the agents knew the kernel's OOM killer did it, or
     * that a node was lost before the scheduler found it (as its own NODE_FAIL would say). */
    if (v->state == JOB_FAILED && v->killed_for_memory)
        v->state = JOB_OUT_OF_MEMORY;
    if (v->state == JOB_FAILED && v->node_lost)
        v->state = JOB_NODE_FAILURE;
    if (!v->sched.found && !(l && l->ended))
        v->source = "record";
    if (v->rec.held_in[0] && !(l && l->ended))
        decide_held_run(v, l);
    else if (v->rec.held_in[0])
        decide_held_end(v, l);
    decide_elapsed(v, l);
}

/* The scheduler's final word, decided, kept in the record for when the scheduler has forgotten
 * the job (MinJobAge, no accounting, PBS without job history). A reader who cannot write the
 * record (a team member's `status`) leaves it to the next. */
static void keep_final(const job_view_t *v)
{
    const job_link_t *l = v->link < v->rec.nlinks ? &v->rec.links[v->link] : NULL;
    ddp_error_t err;
    if (l && !l->kept && v->sched.found && job_state_final(v->state))
        job_record_keep_final(v->rec.dir, v->link, v->state, v->exit_status, v->sched.source,
                              v->sched.sched_state, &err);
}

/* What each view's scheduler says of it: one query per scheduler for all its views. The first
 * query that failed is in err. */
static int query_schedulers(job_view_t *views, size_t n, ddp_error_t *err)
{
    sched_job_t *asked = calloc(n + 1, sizeof *asked);
    if (!asked)
        return ddp_error_set(err, "out of memory");
    int rc = 0;
    const sched_ops_t *q;
    for (size_t row = 0; (q = sched_at(row)); row++) {
        memset(asked, 0, (n + 1) * sizeof *asked);
        int any = 0;
        /* Each id asked once: a packed sweep's trials share their allocation's. */
        size_t *same = calloc(n + 1, sizeof *same);
        if (!same) {
            free(asked);
            return ddp_error_set(err, "out of memory");
        }
        for (size_t i = 0; i < n; i++) {
            same[i] = i;
            if (!views[i].rec.dir || strcmp(views[i].rec.scheduler, q->name))
                continue;
            const char *id =
                views[i].allocation_id[0] ? views[i].allocation_id : job_view_id(&views[i]);
            for (size_t j = 0; j < i && same[i] == i; j++)
                if (asked[j].id[0] && !strcmp(asked[j].id, id))
                    same[i] = j;
            if (same[i] == i)
                snprintf(asked[i].id, sizeof asked[i].id, "%s", id);
            any = 1;
        }
        ddp_error_t qerr = {0};
        if (any && q->query(asked, n, &qerr) && !rc) {
            *err = qerr;
            rc = -1;
        }
        for (size_t i = 0; any && i < n; i++)
            if (asked[same[i]].id[0])
                views[i].sched = asked[same[i]];
        free(same);
    }
    free(asked);
    return rc;
}

/* A held run's allocation's current link's job id, into v->allocation_id; `last` the view before,
 * whose allocation is often the same (a packed sweep's trials). */
static void find_allocation_id(job_view_t *v, const job_view_t *last)
{
    if (last && last->allocation_id[0] && !strcmp(last->rec.held_in, v->rec.held_in)) {
        memcpy(v->allocation_id, last->allocation_id, sizeof v->allocation_id);
        return;
    }
    job_record_t a = {0};
    ddp_error_t err;
    if (job_record_read(v->rec.held_in, &a, &err) == 0 && a.nlinks)
        memcpy(v->allocation_id, a.links[a.nlinks - 1].id, sizeof v->allocation_id);
    job_record_free(&a);
}

int job_views_load(char *const *dirs, size_t n, job_view_t *views, ddp_error_t *err)
{
    memset(views, 0, n * sizeof *views);
    const job_view_t *last_held = NULL;
    for (size_t i = 0; i < n; i++) {
        job_view_t *v = &views[i];
        if (job_record_read(dirs[i], &v->rec, err))
            continue;
        v->link = v->rec.nlinks ? v->rec.nlinks - 1 : 0;
        if (v->rec.held_in[0]) {
            find_allocation_id(v, last_held);
            last_held = v;
        }
    }
    int rc = query_schedulers(views, n, err);
    for (size_t i = 0; i < n; i++) {
        job_view_t *v = &views[i];
        if (!v->rec.dir)
            continue;
        if (v->rec.held_in[0] && v->sched.found && !job_state_final(v->sched.state)) {
            v->allocation_alive = 1;
            v->sched.found = 0;
        }
        read_reports(v);
        read_progress(v);
        job_view_decide(v);
        keep_final(v);
        /* Only where it is the cause status and wait name: not on every poll of a job. */
        if (job_state_final(v->state) && v->state != JOB_COMPLETED && !v->nfailed)
            read_batch_tail(v);
    }
    return rc;
}

void job_views_free(job_view_t *views, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        job_record_free(&views[i].rec);
        free(views[i].failed);
        free(views[i].last_steps);
        free(views[i].changes);
        for (int k = 0; k < views[i].nbatch_tail; k++)
            free(views[i].batch_tail[k]);
    }
}

int job_view_exit(const job_view_t *v)
{
    if (v->state == JOB_COMPLETED)
        return 0;
    /* A cancelled job's batch script may report the cancel's signal as 128 + N or be killed by
     * it (PBS: 256 + N), as the timing falls: neither is a status of the job's own. */
    int killed_by_cancel = v->state == JOB_CANCELLED && v->exit_status > 128;
    return v->exit_status > 0 && v->exit_status < 256 && !killed_by_cancel ? v->exit_status : 1;
}

/* ---- printing -------------------------------------------------------------------------- */

static int link_count(const job_view_t *v)
{
    return v->rec.nlinks > 0 ? v->rec.nlinks : 1;
}

/* "last steps (TIME): 812 (ranks 0-2), 811 (rank 3)": runs of ranks at one step. */
static void print_steps(FILE *f, const job_view_t *v)
{
    if (!v->nsteps)
        return;
    fprintf(f, "  last steps (%s):", v->steps_time);
    for (int r = 0; r < v->nsteps;) {
        int end = r;
        while (end + 1 < v->nsteps && v->last_steps[end + 1] == v->last_steps[r])
            end++;
        fprintf(f, "%s ", r ? "," : "");
        if (v->last_steps[r] < 0)
            fputs("none", f);
        else
            fprintf(f, "%lld", v->last_steps[r]);
        if (end > r)
            fprintf(f, " (ranks %d-%d)", r, end);
        else
            fprintf(f, " (rank %d)", r);
        r = end + 1;
    }
    fputc('\n', f);
}

void job_view_print_cause(FILE *f, const job_view_t *v)
{
    if (v->node_lost)
        fprintf(f, "  node %d (host %s) lost: %s\n", v->node_lost, v->lost_host, v->lost_what);
    for (int i = 0; i < v->nfailed; i++)
        fprintf(f, "  rank %d (node %d, host %s): %s%s\n", v->failed[i].rank, v->failed[i].node,
                v->failed[i].host, v->failed[i].cause,
                v->failed[i].consequence ? " (a consequence: a peer went first)" : "");
    if (v->nfailed || v->node_lost || !v->nbatch_tail)
        return;
    const job_link_t *l = v->link < v->rec.nlinks ? &v->rec.links[v->link] : NULL;
    fprintf(
        f,
        "  no agent reported a failure; the batch shell%s%s said last (ddpjob logs %s --batch):\n",
        l && l->host[0] ? " on " : "", l && l->host[0] ? l->host : "",
        job_view_id(v)[0] ? job_view_id(v) : v->rec.name);
    for (int k = 0; k < v->nbatch_tail; k++) {
        fputs("    ", f);
        term_text_write(f, v->batch_tail[k], strlen(v->batch_tail[k]));
        fputc('\n', f);
    }
}

/* An allocation `ddpjob dev` holds: what its holder does, and how long it has been idle. */
static void print_held(FILE *f, const job_view_t *v)
{
    dev_state_t s;
    dev_state_read(v->rec.dir, &s);
    long long now = (long long)time(NULL);
    if (s.released)
        fprintf(f, "  held for runs until %lld s ago: released (%s)\n", now - s.released_at, s.why);
    else if (s.ready && s.run)
        fprintf(f, "  held for runs (ddpjob run --in %s): run %d going for %lld s\n", v->rec.name,
                s.run, now - s.since);
    else if (s.ready)
        fprintf(f, "  held for runs (ddpjob run --in %s): idle for %lld s of %lld%s\n", v->rec.name,
                now - s.since, (long long)v->rec.idle_s,
                v->rec.idle_s ? "" : " (released at its walltime)");
}

void job_view_print(FILE *f, const job_view_t *v)
{
    fprintf(f, "%s (%s job %s): %s", v->rec.name[0] ? v->rec.name : "?",
            v->rec.scheduler[0] ? v->rec.scheduler : "?", job_view_id(v)[0] ? job_view_id(v) : "?",
            job_state_name(v->state));
    if (v->exit_status >= 0 && job_state_final(v->state))
        fprintf(f, ", exit %d", v->exit_status);
    const job_link_t *l = v->link < v->rec.nlinks ? &v->rec.links[v->link] : NULL;
    if (v->sched.found)
        fprintf(f, " (%s %s%s%s)", v->sched.source, v->sched.sched_state,
                v->sched.reason[0] ? ": " : "", v->sched.reason);
    else if (l && l->kept)
        fprintf(f, " (%s %s, kept in its record: the scheduler no longer knows it)", l->kept_source,
                l->kept_word);
    else if (v->allocation_alive)
        fprintf(f, " (from its record: a run in the allocation held by `ddpjob dev`, %s)",
                v->rec.held_in);
    else
        fprintf(f, " (from its record: the scheduler no longer knows it)");
    char pending[1024];
    pending_explain(&v->sched, job_view_id(v), v->rec.name, pending, sizeof pending);
    if (pending[0])
        fprintf(f, "\n  pending: %s", pending);
    fprintf(f, "\n  link %d of %d", v->link + 1, link_count(v));
    if (v->rec.requeue)
        fprintf(f, " (requeues allowed: %d)", v->rec.requeue);
    if (v->sched.nodes[0])
        fprintf(f, ", nodes %s", v->sched.nodes);
    else if (v->rec.nodes)
        fprintf(f, ", %d node(s)", v->rec.nodes);
    if (v->elapsed[0])
        fprintf(f, ", elapsed %s", v->elapsed);
    if (v->sched.walltime[0])
        fprintf(f, " of %s", v->sched.walltime);
    fprintf(f, "\n");
    if (v->rec.held)
        print_held(f, v);
    job_view_print_cause(f, v);
    for (int i = 0; i < v->nchanges; i++) {
        const node_change_t *x = &v->changes[i];
        if (x->in_place_of[0])
            fprintf(f, "  attempt %d: %s took node %d's place from %s, after: %s\n", x->attempt,
                    x->host, x->node, x->in_place_of, x->after);
        else
            fprintf(f, "  attempt %d: %s joined as node %d\n", x->attempt, x->host, x->node);
    }
    print_steps(f, v);
    fprintf(f, "  record %s\n", v->rec.dir);
    char *output = job_output_moved(v->rec.dir);
    if (output)
        fprintf(f, "  the scheduler's output file in %s (the workdir is open to others)\n", output);
    free(output);
}

/* key: value as a JSON string, or null when value is NULL or empty. */
static void set_text(json_t *o, const char *key, const char *value)
{
    json_object_set_new(o, key, json_shown_string(value && *value ? value : NULL));
}

static json_t *membership_json(const job_view_t *v)
{
    json_t *list = json_array();
    for (int i = 0; list && i < v->nchanges; i++) {
        const node_change_t *x = &v->changes[i];
        json_t *c = json_object();
        json_object_set_new(c, "attempt", json_integer(x->attempt));
        json_object_set_new(c, "node", json_integer(x->node));
        set_text(c, "host", x->host);
        set_text(c, "in_place_of", x->in_place_of);
        set_text(c, "after", x->after);
        json_array_append_new(list, c);
    }
    return list;
}

static json_t *failed_ranks_json(const job_view_t *v)
{
    json_t *list = json_array();
    for (int i = 0; list && i < v->nfailed; i++) {
        const failed_rank_t *x = &v->failed[i];
        json_t *f = json_object();
        json_object_set_new(f, "rank", json_integer(x->rank));
        json_object_set_new(f, "node", json_integer(x->node));
        json_object_set_new(f, "exit_code", json_integer(x->exit_code));
        set_text(f, "host", x->host);
        json_object_set_new(f, "out_of_memory", json_boolean(x->out_of_memory));
        json_object_set_new(f, "gpu_out_of_memory", json_boolean(x->gpu_out_of_memory));
        json_object_set_new(f, "consequence", json_boolean(x->consequence));
        set_text(f, "cause", x->cause);
        json_array_append_new(list, f);
    }
    return list;
}

void job_view_json(FILE *f, const job_view_t *v)
{
    json_t *o = json_object(), *ids = json_array(), *steps = v->nsteps ? json_array() : json_null();
    set_text(o, "name", v->rec.name);
    set_text(o, "id", job_view_id(v));
    for (int k = 0; ids && k < v->rec.nlinks; k++)
        json_array_append_new(ids, json_shown_string(v->rec.links[k].id));
    json_object_set_new(o, "job_ids", ids);
    set_text(o, "scheduler", v->rec.scheduler);
    set_text(o, "state", job_state_name(v->state));
    set_text(o, "scheduler_state", v->sched.found ? v->sched.sched_state : NULL);
    set_text(o, "reason", v->sched.found ? v->sched.reason : NULL);
    char pending[1024];
    pending_explain(&v->sched, job_view_id(v), v->rec.name, pending, sizeof pending);
    set_text(o, "pending", pending);
    set_text(o, "estimated_start", v->sched.found ? v->sched.start : NULL);
    set_text(o, "source", v->source);
    json_object_set_new(o, "exit_status",
                        v->exit_status >= 0 ? json_integer(v->exit_status) : json_null());
    json_object_set_new(o, "link", json_integer(v->link + 1));
    json_object_set_new(o, "links", json_integer(link_count(v)));
    json_object_set_new(o, "nodes", json_integer(v->rec.nodes));
    set_text(o, "hosts", v->sched.nodes);
    set_text(o, "elapsed", v->elapsed);
    set_text(o, "walltime", v->sched.walltime);
    set_text(o, "record", v->rec.dir);
    for (int r = 0; v->nsteps && steps && r < v->nsteps; r++)
        json_array_append_new(steps,
                              v->last_steps[r] < 0 ? json_null() : json_integer(v->last_steps[r]));
    json_object_set_new(o, "last_steps", steps);
    set_text(o, "last_steps_time", v->steps_time);
    json_object_set_new(o, "membership", membership_json(v));
    json_object_set_new(o, "failed_ranks", failed_ranks_json(v));
    json_object_set_new(o, "lost_node",
                        v->node_lost ? json_pack("{s:i, s:s, s:s}", "node", v->node_lost, "host",
                                                 v->lost_host, "what", v->lost_what)
                                     : json_null());
    json_t *batch = v->nbatch_tail ? json_array() : json_null();
    for (int k = 0; batch && k < v->nbatch_tail; k++)
        json_array_append_new(batch, json_shown_string(v->batch_tail[k]));
    json_object_set_new(o, "batch_tail", batch);
    /* One line per job: ", " and ": " between the parts, as jansson writes without an indent. */
    if (!o || json_dumpf(o, f, JSON_PRESERVE_ORDER))
        fputs("null", f);
    json_decref(o);
}

void job_view_state_text(const job_view_t *v, char *out, size_t size)
{
    if (!v->rec.dir) {
        snprintf(out, size, "unknown (no record)");
        return;
    }
    const char *state = job_state_name(v->state);
    const job_link_t *l = v->link < v->rec.nlinks ? &v->rec.links[v->link] : NULL;
    const job_link_t *before = v->link > 0 && l ? l - 1 : NULL;
    int n;
    if (l && l->lost_host[0])
        n = snprintf(out, size, "%s: node %s lost%s", state, l->lost_host,
                     l->asked_again && v->state == JOB_PENDING ? ", to go again" : "");
    else if (v->nfailed)
        n = snprintf(out, size, "%s: rank %d %s", state, v->failed[0].rank, v->failed[0].cause);
    else if (v->exit_status > 0 && job_state_final(v->state))
        n = snprintf(out, size, "%s: exit %d", state, v->exit_status);
    else
        n = snprintf(out, size, "%s", state);
    /* A run that went again on other nodes says why, whatever came of it. */
    if (before && before->asked_again && before->lost_host[0] && n >= 0 && (size_t)n < size)
        snprintf(out + n, size - (size_t)n, " (again: node %s lost)", before->lost_host);
}
