/* The attempt's end: the first end wins (attempt_take_end), a consequence gives way to another
 * failure, a stop signal turns an end unknown or done into its failure, a node whose workers
 * all exited 75 when stopped was checkpointed. And when node 0's store
 * stops answering, attempt_publish_end keeps this agent's own failure as the end and says why the
 * store refused it, with the store's real error (the message was once read from an uninitialised
 * error). A real store and client over loopback. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "agent/supervision/attempt.h"
#include "runtime/base/ddp_clock.h"
#include "runtime/base/ddp_file.h"
#include "tests/unit/tap.h"

static const char token[] = "job-token-for-tests";

/* Runs attempt_publish_end with stderr in a file; returns what it wrote there. */
static char *publish_capturing(agent_t *a, attempt_t *t, const failure_t *f)
{
    char path[] = "/tmp/test_attempt.XXXXXX";
    int fd = mkstemp(path), saved = dup(STDERR_FILENO);
    fflush(stderr);
    dup2(fd, STDERR_FILENO);
    attempt_publish_end(a, t, f, END_FAILED);
    fflush(stderr);
    dup2(saved, STDERR_FILENO);
    close(saved);
    close(fd);
    ddp_error_t err;
    char *text = ddp_read_file(path, NULL, &err);
    unlink(path);
    return text;
}

static failure_t failure(failure_cause_t cause, int code, const char *what)
{
    failure_t f = {.kind = FAIL_WORKER, .code = code, .node = 0, .rank = 0, .cause = cause};
    snprintf(f.what, sizeof f.what, "%s", what);
    return f;
}

static void test_first_end_wins(void)
{
    attempt_t t = {0};
    failure_t own = failure(CAUSE_OWN, 3, "exited with code 3");
    failure_t other = failure(CAUSE_OWN, 4, "exited with code 4");
    failure_t consequence = failure(CAUSE_CONSEQUENCE, 1, "its peer went away");
    ok(!attempt_take_end(&t, END_UNKNOWN, NULL) && t.end == END_UNKNOWN, "no end is not an end");
    ok(attempt_take_end(&t, END_FAILED, &own) && t.first.code == 3, "the first failure is taken");
    ok(!attempt_take_end(&t, END_FAILED, &other) && t.first.code == 3,
       "a second failure does not replace it");
    ok(!attempt_take_end(&t, END_DONE, NULL) && t.end == END_FAILED, "nor does done");

    t = (attempt_t){0};
    ok(attempt_take_end(&t, END_DONE, NULL), "done is taken");
    ok(!attempt_take_end(&t, END_FAILED, &own) && t.end == END_DONE,
       "and a failure after it is not");

    t = (attempt_t){0};
    attempt_take_end(&t, END_FAILED, &consequence);
    ok(attempt_take_end(&t, END_FAILED, &own) && t.first.code == 3,
       "a consequence gives way to its cause");
    ok(!attempt_take_end(&t, END_FAILED, &consequence) && t.first.code == 3, "and the cause stays");
    t = (attempt_t){0};
    attempt_take_end(&t, END_FAILED, &consequence);
    ok(!attempt_take_end(&t, END_DONE, NULL) && t.end == END_FAILED,
       "a consequence does not give way to done");

    failure_t signal = {.kind = FAIL_SIGNAL, .code = 143};
    t = (attempt_t){0};
    attempt_take_end(&t, END_DONE, NULL);
    attempt_stop_signalled(&t, &signal);
    ok(t.end == END_FAILED && t.first.code == 143, "a stop signal turns done into its failure");
    t = (attempt_t){0};
    attempt_stop_signalled(&t, &signal);
    ok(t.end == END_FAILED && t.first.code == 143, "and an end unknown");
    t = (attempt_t){0};
    attempt_take_end(&t, END_FAILED, &own);
    attempt_stop_signalled(&t, &signal);
    ok(t.first.code == 3, "but not another failure");
    t = (attempt_t){0};
    attempt_take_end(&t, END_CHECKPOINTED, NULL);
    attempt_stop_signalled(&t, &signal);
    ok(t.end == END_CHECKPOINTED, "nor a checkpoint");
}

/* The second override: a node whose workers all exited 75 was stopped with its checkpoints,
 * whether its agent's signal or a rank's own exit 75 (the stop reached it first) came first. */
static void test_stopped_with_checkpoints(void)
{
    worker_t w[2] = {{.status = 75 << 8}, {.status = 75 << 8}};
    attempt_t t = {.end = END_FAILED, .workers = w, .nworkers = 2};
    t.first = (failure_t){.kind = FAIL_SIGNAL, .code = 128 + 15};
    ok(attempt_stopped_with_checkpoints(&t), "told to stop, every worker exited 75: checkpointed");
    t.first = failure(CAUSE_OWN, 75, "exited with code 75");
    ok(attempt_stopped_with_checkpoints(&t), "a rank's exit 75 first, every worker 75: too");
    w[1].status = 9; /* killed by SIGKILL */
    ok(!attempt_stopped_with_checkpoints(&t), "but not when a worker did not exit 75");
    w[1].status = 75 << 8;
    t.first = failure(CAUSE_OWN, 3, "exited with code 3");
    ok(!attempt_stopped_with_checkpoints(&t), "nor after a rank's failure (exit 3)");
}

int main(void)
{
    test_first_end_wins();
    test_stopped_with_checkpoints();
    ddp_error_t err;
    ddp_store_server_t *server =
        ddp_store_server_start("127.0.0.1", 0, token, sizeof token - 1, 0, NULL, NULL, &err);
    ok(server != NULL, "a store on loopback");
    if (!server)
        return done_testing();
    ddp_store_client_t *client =
        ddp_store_client_connect("127.0.0.1", ddp_store_server_port(server), token,
                                 sizeof token - 1, ddp_deadline_in(5000), NULL, &err);
    ok(client != NULL, "a client of it");
    if (!client)
        return done_testing();
    agent_options_t o = {.node_rank = 1, .nnodes = 2};
    agent_t a = {.o = &o, .node_rank = 1, .nnodes = 2, .client = client};
    attempt_t t = {.round = 0};
    failure_t f = {.kind = FAIL_WORKER, .code = 3, .node = 1, .rank = 2, .local_rank = 0};
    snprintf(f.host, sizeof f.host, "n2");
    snprintf(f.what, sizeof f.what, "exited with code 3");

    /* Its connection cut under it, as when node 0's host goes down. */
    shutdown(ddp_store_client_fd(client), SHUT_RDWR);
    char *said = publish_capturing(&a, &t, &f);
    ok(said && strstr(said, "ddpjob-agent: cannot publish the end of the attempt: "),
       "the agent says it cannot publish the end");
    const char *why = said ? strstr(said, "attempt: ") : NULL;
    why = why ? why + strlen("attempt: ") : "";
    ok(strstr(why, "127.0.0.1:") && strstr(why, "127.0.0.1:") < why + strcspn(why, "\n"),
       "and why, in the store client's own words (naming the store): %.*s", (int)strcspn(why, "\n"),
       why);
    ok(t.end == END_FAILED && t.first.code == 3 && t.first.rank == 2 &&
           !strcmp(t.first.what, "exited with code 3"),
       "its own failure stands as the end of the attempt");
    free(said);
    ddp_store_client_close(client);
    ddp_store_server_stop(server);
    return done_testing();
}
