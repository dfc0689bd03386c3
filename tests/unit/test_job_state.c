/* The state vocabulary's mappings, the schedulers' outputs as the parsers read them (Slurm 22.05
 * as installed here, OpenPBS 23.06's qstat -f with a wrapped value, Debian's gridengine 8.1.9's
 * qstat and qacct), and a job record cut short
 * by a node that died while writing it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/jobs/job_record.h"
#include "cli/jobs/job_state.h"
#include "cli/view/job_view.h"
#include "cli/jobs/json_doc.h"
#include "cli/jobs/node_loss.h"
#include "cli/view/pending_reason.h"
#include "cli/sched/sched_pbs.h"
#include "cli/sched/sched_sge.h"
#include "cli/sched/sched_slurm.h"
#include "tests/unit/tap.h"

static void write_text(const char *dir, const char *name, const char *text)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    if (f) {
        fputs(text, f);
        fclose(f);
    }
}

/* Each scheduler's word, and the record's end, in the one vocabulary. */
static void states(void)
{
    static const struct {
        const char *word;
        job_state_t want;
    } slurm[] = {
        {"PENDING", JOB_PENDING},
        {"RUNNING", JOB_RUNNING},
        {"COMPLETING", JOB_RUNNING},
        {"COMPLETED", JOB_COMPLETED},
        {"FAILED", JOB_FAILED},
        {"CANCELLED by 1000", JOB_CANCELLED},
        {"CANCELLED+", JOB_CANCELLED},
        {"TIMEOUT", JOB_TIMEOUT},
        {"OUT_OF_MEMORY", JOB_OUT_OF_MEMORY},
        {"NODE_FAIL", JOB_NODE_FAILURE},
        {"BOOT_FAIL", JOB_NODE_FAILURE},
        {"REQUEUED", JOB_REQUEUED},
        {"PREEMPTED", JOB_CANCELLED},
        {"running", JOB_RUNNING},
        {"", JOB_UNKNOWN},
        {"SOMETHING_NEW", JOB_UNKNOWN},
    };
    for (size_t i = 0; i < sizeof slurm / sizeof slurm[0]; i++)
        ok(sched_slurm_state(slurm[i].word) == slurm[i].want, "Slurm \"%s\" is %s", slurm[i].word,
           job_state_name(slurm[i].want));

    ok(sched_pbs_state('Q', -1) == JOB_PENDING, "PBS Q: pending");
    ok(sched_pbs_state('H', -1) == JOB_PENDING, "PBS H (held): pending");
    ok(sched_pbs_state('R', -1) == JOB_RUNNING, "PBS R: running");
    ok(sched_pbs_state('E', -1) == JOB_RUNNING, "PBS E (exiting): running");
    ok(sched_pbs_state('F', 0) == JOB_COMPLETED, "PBS F, 0: completed");
    ok(sched_pbs_state('F', 3) == JOB_FAILED, "PBS F, 3: failed");
    ok(sched_pbs_state('F', 265) == JOB_CANCELLED, "PBS F, 265 (256+SIGKILL, qdel): cancelled");
    ok(sched_pbs_state('F', 137) == JOB_CANCELLED, "PBS F, 137 (sites that say 128+9): cancelled");
    ok(sched_pbs_state('F', -29) == JOB_TIMEOUT, "PBS F, -29 (walltime): timeout");
    ok(sched_pbs_state('F', -1) == JOB_CANCELLED, "PBS F without a status: deleted before it ran");
    ok(sched_pbs_state('X', 0) == JOB_COMPLETED, "PBS X (a subjob), 0: completed");

    ok(job_state_from_exit(0, 0, 0) == JOB_COMPLETED, "record: 0 completed");
    ok(job_state_from_exit(3, 0, 0) == JOB_FAILED, "record: 3 failed");
    ok(job_state_from_exit(75, 1, 0) == JOB_REQUEUED, "record: 75 with a successor: requeued");
    ok(job_state_from_exit(75, 0, 0) == JOB_TIMEOUT, "record: 75, no requeue left: timeout");
    ok(job_state_from_exit(75, 0, 1) == JOB_CANCELLED,
       "record: 75 after cancel --checkpoint: cancelled");
    ok(job_state_from_exit(-1, 0, 0) == JOB_RUNNING, "record: no end yet: running");
    ok(!job_state_final(JOB_REQUEUED) && job_state_final(JOB_OUT_OF_MEMORY),
       "requeued is not an end; out of memory is");
}

/* squeue's, sacct's and qstat -f's text as the real ones print it. */
static void scheduler_text(void)
{
    sched_job_t jobs[3] = {{.id = "41"}, {.id = "42"}, {.id = "43"}};
    size_t n =
        sched_slurm_parse_squeue("42|RUNNING|None|0:07|5:00|n[1-2]|2026-11-27T09:40:07|debug|2\n"
                                 "4|PENDING|Resources|0:00|5:00||N/A|debug|2\n"
                                 "garbage line\n",
                                 jobs, 3);
    ok(n == 1 && jobs[1].found && jobs[1].state == JOB_RUNNING &&
           !strcmp(jobs[1].nodes, "n[1-2]") && !strcmp(jobs[1].elapsed, "0:07") &&
           jobs[1].reason[0] == 0,
       "squeue: 42 running on n[1-2]; 4 is not 41..43; a line without the fields is passed over");
    n = sched_slurm_parse_sacct("41|REQUEUED|0:0|00:00:30|00:05:00|n1|None\n"
                                "41|OUT_OF_MEMORY|0:125|00:01:02|00:05:00|n1|None\n"
                                "43|CANCELLED by 0|0:15|00:00:03|00:05:00|n[1-2]|None\n",
                                jobs, 3);
    ok(n == 2 && jobs[0].state == JOB_OUT_OF_MEMORY && jobs[0].exit_status == 128 + 125,
       "sacct: 41 out of memory (its last run; the requeued one before it passed over)");
    ok(jobs[2].state == JOB_CANCELLED && jobs[2].exit_status == 128 + 15,
       "sacct: 43 cancelled, by signal 15 (ExitCode 0:15)");

    sched_job_t pbs[2] = {{.id = "7.pbshead"}, {.id = "8"}};
    n = sched_pbs_parse_qstat(
        "Job Id: 7.pbshead\n"
        "    Job_Name = e2e\n"
        "    job_state = F\n"
        "    comment = Job run at Tue Nov 24 at 07:02 on (n1:ncpus=2:ngpus=2)+(n2:\n"
        "\tncpus=2:ngpus=2) and finished\n"
        "    exec_host = n1/0*2+n2/0*2\n"
        "    Exit_status = 3\n"
        "    resources_used.walltime = 00:00:05\n"
        "    Resource_List.walltime = 00:05:00\n"
        "\n"
        "Job Id: 8.pbshead\n"
        "    job_state = Q\n",
        pbs, 2);
    ok(n == 2 && pbs[0].state == JOB_FAILED && pbs[0].exit_status == 3 &&
           !strcmp(pbs[0].elapsed, "00:00:05") && !strcmp(pbs[0].walltime, "00:05:00") &&
           !strcmp(pbs[0].nodes, "n1/0*2+n2/0*2"),
       "qstat -f: 7.pbshead failed with 3, its walltime used and asked, its hosts");
    is_str(
        pbs[0].reason,
        "Job run at Tue Nov 24 at 07:02 on (n1:ncpus=2:ngpus=2)+(n2:ncpus=2:ngpus=2) and finished",
        "a wrapped value (a tab-led continuation) is joined");
    ok(pbs[1].found && pbs[1].state == JOB_PENDING, "\"8\" names 8.pbshead: pending");
}

/* Grid Engine 8.1.9's words, as the sge suite's cell printed them. */
static void sge_text(void)
{
    sched_job_t jobs[5] = {{.id = "1"}, {.id = "2"}, {.id = "3.2"}, {.id = "4"}, {.id = "9"}};
    size_t n = sched_sge_parse_qstat(
        "job-ID  prior   name       user         state submit/start at     queue                 "
        "         slots ja-task-ID \n"
        "------------------------------------------------------------------------------------------"
        "-----------------------\n"
        "      1 0.75000 a.sh       ddpjsge      r     11/29/2026 20:51:23 all.q@n1               "
        "            4        \n"
        "      2 0.75000 a.sh       ddpjsge      qw    11/29/2026 20:51:22                        "
        "            4        \n"
        "      3 0.25000 arr        ddpjsge      qw    11/29/2026 20:51:22                        "
        "            1 1\n"
        "      3 0.25000 arr        ddpjsge      r     11/29/2026 20:51:22 all.q@n2               "
        "            1 2\n"
        "      4 0.00000 dep        ddpjsge      hqw   11/29/2026 20:51:22                        "
        "            1        \n",
        jobs, 5);
    ok(n == 4 && jobs[0].state == JOB_RUNNING && !strcmp(jobs[0].nodes, "n1") &&
           !strcmp(jobs[0].partition, "all.q"),
       "qstat -g d: job 1 runs on n1 in all.q");
    ok(jobs[1].state == JOB_PENDING && jobs[2].state == JOB_RUNNING && !strcmp(jobs[2].nodes, "n2"),
       "job 2 waits; array task 3.2 runs on n2 (its own line, not task 3.1's)");
    ok(jobs[3].state == JOB_PENDING && !strcmp(jobs[3].sched_state, "hqw") && !jobs[4].found,
       "job 4 held (hqw); job 9 not listed");
    sched_sge_parse_job_info("jid_predecessor_list (req): 1\n"
                             "jid_predecessor_list:       1\n"
                             "scheduling info:            queue instance \"all.q@n1\" dropped "
                             "because it is full\n"
                             "                            All queues dropped because of overload "
                             "or full\n",
                             &jobs[3]);
    ok(jobs[3].has_dependency && !strcmp(jobs[3].reason, "All queues dropped because of overload "
                                                         "or full"),
       "qstat -j: a predecessor, and the job's own scheduling info (not a queue instance's)");
    char text[512];
    pending_text_t t = {text, sizeof text};
    sched_sge_explain_pending(&t, &jobs[3], "4", "dep");
    is_str(text,
           "waiting for the job it depends on to end (the earlier link of a requeue chain, a "
           "sweep's lane, or a dependency you gave)",
           "a held job with a predecessor waits for it");

    sched_job_t ended = {.id = "1"};
    ok(sched_sge_parse_qacct("==============================================================\n"
                             "qname        all.q               \n"
                             "hostname     n2                  \n"
                             "failed       0    \n"
                             "exit_status  4                   \n"
                             "==============================================================\n"
                             "qname        all.q               \n"
                             "hostname     n1                  \n"
                             "failed       0    \n"
                             "exit_status  0                   \n",
                             &ended) &&
           ended.state == JOB_COMPLETED && ended.exit_status == 0 && !strcmp(ended.nodes, "n1"),
       "qacct: the job's record, the last (its qrsh task's, before it, exited 4)");
    ok(sched_sge_ended_state(37, 137) == JOB_TIMEOUT &&
           sched_sge_ended_state(100, 137) == JOB_CANCELLED &&
           sched_sge_ended_state(0, 3) == JOB_FAILED &&
           sched_sge_ended_state(0, 75) == JOB_REQUEUED,
       "qacct: h_rt's kill (failed 37), qdel's (failed 100, 137), a failure, a requeue link");
}

/* Why a job is pending, from the real schedulers' words (tests/agent/pending.sh saw them). */
static void pending_words(void)
{
    sched_job_t jobs[3] = {{.id = "2"}, {.id = "3"}, {.id = "5"}};
    sched_slurm_parse_squeue("2|PENDING|Resources|0:00|10:00||2020-03-04T09:50:20|gpu|2\n"
                             "3|PENDING|JobHeldUser|0:00|10:00||N/A|gpu|1\n"
                             "5|PENDING|PartitionTimeLimit|0:00|30:00||N/A|short|1\n",
                             jobs, 3);
    sched_slurm_parse_running("gpu|1\ngpu|2\nother|4\n", jobs, 3);
    char out[1024];
    pending_explain(&jobs[0], "2", "e2e", out, sizeof out);
    is_str(out,
           "waiting for 2 free nodes in partition gpu (2 running jobs hold 3 nodes); Slurm "
           "estimates the start at Wed 04 Mar 09:50",
           "Resources: the nodes it waits for, what holds them, the start Slurm estimates");
    ok(jobs[1].partition_running == -1, "a held job's partition is not counted");
    pending_explain(&jobs[1], "3", "e2e", out, sizeof out);
    is_str(out, "held by you: `scontrol release 3` lets it start", "JobHeldUser: how to release");
    pending_explain(&jobs[2], "5", "e2e", out, sizeof out);
    ok(strstr(out, "over partition short's limit") && strstr(out, "`ddpjob cancel e2e`"),
       "PartitionTimeLimit: the partition, and what to do");

    sched_job_t pbs[3] = {{.id = "1"}, {.id = "2"}, {.id = "3"}};
    sched_pbs_parse_qstat(
        "Job Id: 1.pbshead\n    job_state = Q\n    queue = workq\n"
        "    comment = Not Running: Insufficient amount of resource: ngpus (R: 1 A: "
        "0 \n\tT: 2)\n"
        "    estimated.start_time = Wed Mar  4 09:50:20 2020\n"
        "Job Id: 2.pbshead\n    job_state = Q\n"
        "    comment = Can Never Run: Insufficient amount of resource: ncpus (R: 4 "
        "A: 2 T: 2)\n"
        "Job Id: 3.pbshead\n    job_state = H\n    Hold_Types = s\n"
        "    depend = afterany:2.pbshead@pbshead\n",
        pbs, 3);
    pending_explain(&pbs[0], "1.pbshead", "e2e", out, sizeof out);
    ok(strstr(out, "waiting for ngpus: it asks for 1, 0 of 2 are free (PBS: Not Running") == out &&
           strstr(out, "; PBS estimates the start at Wed 04 Mar 09:50"),
       "PBS: the resource it waits for, from its comment, and the estimated start");
    pending_explain(&pbs[1], "2.pbshead", "e2e", out, sizeof out);
    ok(strstr(out, "it can never run: it asks for 4 ncpus and there are 2 in all") == out,
       "PBS: a job that can never run says so");
    pending_explain(&pbs[2], "3.pbshead", "e2e", out, sizeof out);
    ok(strstr(out, "waiting for the job it depends on") == out,
       "PBS: a chain's next link held for its dependency");
}

/* A record whose writer died mid-line: what is whole counts. */
static void truncated_record(void)
{
    char dir[] = "/tmp/test_job_state.XXXXXX";
    ok(mkdtemp(dir) != NULL, "a record folder");
    write_text(dir, "job.json",
               "{\n  \"version\": 1,\n  \"name\": \"cut\",\n  \"scheduler\": \"pbs\",\n"
               "  \"workdir\": \"/wor");
    write_text(dir, "links", "0 11.pbshead\n1 12.pbs");
    mkdir(strcat(strcpy((char[4096]){0}, dir), "/link-0"), 0755);
    write_text(dir, "link-0/started", "1700000000 11.pbshead n1\n");
    write_text(dir, "link-0/ended", "75 17000");
    job_record_t r;
    ddp_error_t err;
    ok(job_record_read(dir, &r, &err) == 0, "a truncated record reads");
    ok(r.version == 1 && !strcmp(r.name, "cut") && !strcmp(r.scheduler, "pbs") && r.workdir[0] == 0,
       "job.json: the whole fields, not the one cut short");
    ok(r.nlinks == 1 && !strcmp(r.links[0].id, "11.pbshead"), "links: the whole line only");
    ok(r.links[0].started && !strcmp(r.links[0].host, "n1") && !r.links[0].ended,
       "link 0 started on n1; its end, cut short, is not an end");
    job_record_free(&r);
    char empty[] = "/tmp/test_job_state.XXXXXX";
    ok(mkdtemp(empty) && job_record_read(empty, &r, &err) == -1 &&
           strstr(err.msg, "holds no job record"),
       "a folder without a record is named as such");
    /* A folder others can write, or one inside such a folder, may hold what another user put
     * there: refused, saying why. */
    chmod(dir, 0777);
    ok(job_record_read(dir, &r, &err) == -1 && strstr(err.msg, "not trusting the job record") &&
           strstr(err.msg, "others can write (mode 0777)"),
       "a record folder others can write is refused: %s", err.msg);
    chmod(dir, 0700);
    char shared[] = "/tmp/test_job_state.XXXXXX", inner[4200];
    ok(mkdtemp(shared) && chmod(shared, 0777) == 0, "a shared folder without the sticky bit");
    snprintf(inner, sizeof inner, "%s/rec", shared);
    mkdir(inner, 0700);
    write_text(inner, "links", "0 11.pbshead\n");
    ok(job_record_read(inner, &r, &err) == -1 && strstr(err.msg, shared),
       "a record in a folder others can write is refused, naming that folder: %s", err.msg);
    char cmd[16384];
    snprintf(cmd, sizeof cmd, "rm -rf '%s' '%s' '%s'", dir, empty, shared);
    ok(system(cmd) == 0, "cleaned up");
}

/* What agents and records write is read within bounds: a huge or deeply nested document, or one
 * that is not UTF-8, is no document (a runaway or hostile file). */
static void hostile_json(void)
{
    size_t deep = 200000;
    char *text = malloc(2 * deep + 1);
    memset(text, '[', deep);
    memset(text + deep, ']', deep);
    text[2 * deep] = 0;
    json_doc_t doc;
    ok(json_doc_parse(&doc, text, 2 * deep) == -1, "200,000 nested lists are refused");
    char nested[2 * JSON_DOC_MAX_DEPTH + 2];
    snprintf(nested, sizeof nested, "%.*s1%.*s", JSON_DOC_MAX_DEPTH, text, JSON_DOC_MAX_DEPTH,
             text + 2 * deep - JSON_DOC_MAX_DEPTH);
    ok(json_doc_parse(&doc, nested, strlen(nested)) == 0, "%d nested lists are read",
       JSON_DOC_MAX_DEPTH);
    json_doc_free(&doc);
    const char *in_string = "{\"a\": \"[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[\"}";
    ok(json_doc_parse(&doc, in_string, strlen(in_string)) == 0,
       "brackets inside a string are not nesting");
    json_doc_free(&doc);
    free(text);
    size_t big = JSON_DOC_MAX_BYTES + 1;
    text = malloc(big + 1);
    memset(text, ' ', big);
    text[0] = '{';
    text[big - 1] = '}';
    text[big] = 0;
    ok(json_doc_parse(&doc, text, big) == -1, "a document over %u bytes is refused",
       JSON_DOC_MAX_BYTES);
    free(text);
    ok(json_doc_parse(&doc, "{\"a\": \"\xff\xfe\"}", 11) == -1, "invalid UTF-8 is no document");
}

/* Ids from a record reach scancel, qdel and qstat only in a scheduler's shape. */
static void job_ids(void)
{
    ok(job_id_valid("123") && job_id_valid("123_4") && job_id_valid("123+1") &&
           job_id_valid("4242.srv") && job_id_valid("12[].pbs-head.example") &&
           job_id_valid("12[3].srv"),
       "Slurm's and PBS's ids are ids");
    ok(!job_id_valid("--me") && !job_id_valid("-1") && !job_id_valid("") && !job_id_valid("1;rm") &&
           !job_id_valid("1 2") && !job_id_valid("srv.1") && !job_id_valid("1$(id)"),
       "options, words, blanks and shell text are not");
}

/* wait's exit status: a cancelled job's signal death, whichever form the timing gave it, is 1;
 * a cancel --checkpoint's 75 is the job's own. */
static void wait_status(void)
{
    struct {
        job_state_t state;
        int exit_status, want;
    } cases[] = {
        {JOB_COMPLETED, 0, 0},   {JOB_FAILED, 3, 3},      {JOB_FAILED, 137, 137},
        {JOB_FAILED, 271, 1},    {JOB_CANCELLED, 143, 1}, {JOB_CANCELLED, 271, 1},
        {JOB_CANCELLED, 75, 75}, {JOB_CANCELLED, -1, 1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        job_view_t v = {.state = cases[i].state, .exit_status = cases[i].exit_status};
        ok(job_view_exit(&v) == cases[i].want, "wait: %s with status %d exits %d (got %d)",
           job_state_name(cases[i].state), cases[i].exit_status, cases[i].want, job_view_exit(&v));
    }
}

/* A PBS job's Exit_status 137 (128 + SIGKILL): a qdel where a site says so, a worker killed by
 * SIGKILL where the agents reported a failed rank. */
static void pbs_sigkill(void)
{
    failed_rank_t rank1 = {.rank = 1, .exit_code = 137};
    job_view_t v = {.sched = {.found = 1, .state = JOB_CANCELLED, .exit_status = 137}};
    job_view_decide(&v);
    ok(v.state == JOB_CANCELLED, "PBS 137 with no failed rank reported: cancelled");
    v = (job_view_t){.sched = {.found = 1, .state = JOB_CANCELLED, .exit_status = 137},
                     .failed = &rank1,
                     .nfailed = 1};
    job_view_decide(&v);
    ok(v.state == JOB_FAILED && job_view_exit(&v) == 137,
       "PBS 137 with rank 1 reported killed: failed, and wait exits 137");
    v.rec.cancelled = 1;
    job_view_decide(&v);
    ok(v.state == JOB_CANCELLED, "... unless ddpjob cancel stopped it");
    v = (job_view_t){.sched = {.found = 1, .state = JOB_CANCELLED, .exit_status = 265},
                     .failed = &rank1,
                     .nfailed = 1};
    job_view_decide(&v);
    ok(v.state == JOB_CANCELLED, "PBS 265 (256 + SIGKILL: the server's kill): cancelled");
}

/* The state never changes once the scheduler forgets the job: the first final word kept in the
 * record answers after; without one, what the batch shell wrote of the signal that ended it. */
static void kept_state(void)
{
    char dir[] = "/tmp/test_job_state.XXXXXX";
    ok(mkdtemp(dir) != NULL, "a record folder");
    write_text(dir, "job.json",
               "{\n  \"version\": 1,\n  \"name\": \"k\",\n  \"scheduler\": \"slurm\"\n}\n");
    write_text(dir, "links", "0 41\n");
    mkdir(strcat(strcpy((char[4096]){0}, dir), "/link-0"), 0700);
    write_text(dir, "link-0/started", "1700000000 41 n1\n");
    write_text(dir, "link-0/ended", "0 1700000100\n");
    ddp_error_t err;
    ok(job_record_keep_final(dir, 0, JOB_TIMEOUT, 0, "squeue", "TIMEOUT", &err) == 0,
       "a final word kept");
    ok(job_record_keep_final(dir, 0, JOB_COMPLETED, 0, "sacct", "COMPLETED", &err) == 0,
       "a second is not kept over it");
    job_view_t v = {0};
    ok(job_record_read(dir, &v.rec, &err) == 0, "the record reads");
    job_view_decide(&v);
    ok(v.state == JOB_TIMEOUT && v.exit_status == 0 && !strcmp(v.source, "record"),
       "forgotten by the scheduler: the kept state, not the exit status's (%s)",
       job_state_name(v.state));
    char text[1024] = "";
    FILE *f = fmemopen(text, sizeof text, "w");
    job_view_print(f, &v);
    fclose(f);
    ok(strstr(text, "k (slurm job 41): timeout, exit 0 (squeue TIMEOUT, kept in its record") !=
           NULL,
       "status says whose word it was: %.*s", (int)strcspn(text, "\n"), text);
    v.sched = (sched_job_t){.found = 1, .state = JOB_TIMEOUT, .source = "squeue"};
    job_view_decide(&v);
    ok(v.state == JOB_TIMEOUT, "the same while the scheduler knew it");
    job_record_free(&v.rec);
    unlink(strcat(strcpy((char[4096]){0}, dir), "/link-0/final"));
    const struct {
        const char *ended;
        job_state_t state;
    } by[] = {{"143 1700000100 sched=TIMEOUT\n", JOB_TIMEOUT},
              {"143 1700000100 sched=CANCELLED\n", JOB_CANCELLED},
              {"143 1700000100 sched=NODE_FAIL\n", JOB_NODE_FAILURE},
              {"143 1700000100 walltime\n", JOB_TIMEOUT},
              {"143 1700000100 signal\n", JOB_CANCELLED},
              {"143 1700000100 sched=RUNNING\n", JOB_FAILED},
              {"143 1700000100 \033]0;x\n", JOB_FAILED}};
    for (size_t i = 0; i < sizeof by / sizeof by[0]; i++) {
        write_text(dir, "link-0/ended", by[i].ended);
        v = (job_view_t){0};
        job_record_read(dir, &v.rec, &err);
        job_view_decide(&v);
        ok(v.state == by[i].state, "ended by \"%.*s\": %s", (int)strcspn(by[i].ended + 15, "\n"),
           by[i].ended + 15, job_state_name(v.state));
        job_record_free(&v.rec);
    }
    write_text(dir, "link-0/final", "out_of_memory 1 squeue \033[31m\n");
    v = (job_view_t){0};
    job_record_read(dir, &v.rec, &err);
    ok(v.rec.links[0].kept && !strchr(v.rec.links[0].kept_word, '\033'),
       "a kept word is taken as text, never a terminal's sequence");
    job_record_free(&v.rec);
    write_text(dir, "link-0/final", "running 0 squeue RUNNING\n");
    v = (job_view_t){0};
    job_record_read(dir, &v.rec, &err);
    ok(!v.rec.links[0].kept, "a state that is not final is never kept");
    job_record_free(&v.rec);
    char cmd[8192];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    ok(system(cmd) == 0, "cleaned up");
}

/* A held run's link that ended: its holder's word decides (link-K/holder), and what the agents
 * left says whether a node was lost under it (node_loss.h). */
static void held_run_end(void)
{
    char dir[] = "/tmp/test_job_state.XXXXXX";
    ok(mkdtemp(dir) != NULL, "a record folder");
    write_text(dir, "job.json",
               "{\n  \"version\": 1,\n  \"name\": \"t\",\n  \"scheduler\": \"slurm\",\n"
               "  \"held_in\": \"/nowhere\"\n}\n");
    write_text(dir, "links", "0 41\n");
    mkdir(strcat(strcpy((char[4096]){0}, dir), "/link-0"), 0700);
    write_text(dir, "link-0/started", "1700000000 41 n1\n");
    write_text(dir, "link-0/ended", "137 1700000100\n");
    const struct {
        const char *word; /* NULL: none yet */
        int alive;
        job_state_t state;
        const char *text;
    } cases[] = {
        {NULL, 1, JOB_RUNNING, "running"},
        {"ended\n", 1, JOB_FAILED, "failed: exit 137"},
        {"again\n", 1, JOB_PENDING, "pending"},
        {"lost n2 again\n", 1, JOB_PENDING, "pending: node n2 lost, to go again"},
        {"lost n2 again\n", 0, JOB_NODE_FAILURE, "node failure: node n2 lost"},
        {"lost n2\n", 1, JOB_NODE_FAILURE, "node failure: node n2 lost"},
        {"lost n2 aga", 1, JOB_RUNNING, "running"},
    };
    char path[4200], cancelled_path[4200], text[256];
    snprintf(path, sizeof path, "%s/link-0/holder", dir);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        unlink(path);
        if (cases[i].word)
            write_text(dir, "link-0/holder", cases[i].word);
        job_view_t v = {.allocation_alive = cases[i].alive};
        ddp_error_t err;
        ok(job_record_read(dir, &v.rec, &err) == 0, "the record reads");
        job_view_decide(&v);
        job_view_state_text(&v, text, sizeof text);
        ok(v.state == cases[i].state && !strcmp(text, cases[i].text),
           "holder said \"%.*s\", the allocation %s: \"%s\"",
           cases[i].word ? (int)strcspn(cases[i].word, "\n") : 4,
           cases[i].word ? cases[i].word : "none", cases[i].alive ? "alive" : "gone", text);
        job_record_free(&v.rec);
    }
    /* Cancelled: final at once, whether or not the holder, cancelled with it, said a word. */
    unlink(path);
    write_text(dir, "cancelled", "");
    job_view_t c = {.allocation_alive = 1};
    ddp_error_t cerr;
    job_record_read(dir, &c.rec, &cerr);
    job_view_decide(&c);
    ok(c.state == JOB_CANCELLED,
       "a cancelled run's end, no holder's word, the allocation ending: %s",
       job_state_name(c.state));
    job_record_free(&c.rec);
    snprintf(cancelled_path, sizeof cancelled_path, "%s/cancelled", dir);
    unlink(cancelled_path);
    /* Link 1 going after link 0's node was lost: its row says why it went again. */
    write_text(dir, "link-0/holder", "lost n2 again\n");
    write_text(dir, "links", "0 41\n1 41\n");
    mkdir(strcat(strcpy((char[4096]){0}, dir), "/link-1"), 0700);
    write_text(dir, "link-1/started", "1700000200 41 n1\n");
    write_text(dir, "link-1/ended", "0 1700000300\n");
    write_text(dir, "link-1/holder", "ended\n");
    job_view_t v = {.allocation_alive = 1};
    ddp_error_t err;
    job_record_read(dir, &v.rec, &err);
    v.link = 1;
    job_view_decide(&v);
    job_view_state_text(&v, text, sizeof text);
    is_str(text, "completed (again: node n2 lost)", "the link after says why it went again");
    job_record_free(&v.rec);

    /* What node_loss_find reads: node 0's agent silent after it began, a report naming a lost
     * agent, and a report of a worker's own failure. */
    char host[256] = "";
    ok(!node_loss_find(dir, 0, "n1", host, sizeof host), "no history, no report: no node lost");
    write_text(dir, "link-0/history.jsonl", "{}\n");
    ok(node_loss_find(dir, 0, "n1", host, sizeof host) && !strcmp(host, "n1"),
       "node 0's agent began and left no report: its host lost (%s)", host);
    write_text(dir, "link-0/error-node0.json",
               "{\"first_failure\": {\"kind\": \"lost\", \"node\": 1, \"host\": \"n2\"}}");
    ok(node_loss_find(dir, 0, "n1", host, sizeof host) && !strcmp(host, "n2"),
       "a report naming a lost agent: that node's host (%s)", host);
    write_text(dir, "link-0/error-node0.json",
               "{\"first_failure\": {\"kind\": \"worker\", \"node\": 0, \"host\": \"n1\"}}");
    ok(!node_loss_find(dir, 0, "n1", host, sizeof host), "a worker's own failure: no node lost");
    char cmd[8192];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    ok(system(cmd) == 0, "cleaned up");
}

int main(void)
{
    pbs_sigkill();
    states();
    wait_status();
    scheduler_text();
    sge_text();
    pending_words();
    truncated_record();
    kept_state();
    held_run_end();
    job_ids();
    hostile_json();
    return done_testing();
}
