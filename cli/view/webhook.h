/* webhook: one JSON message POSTed to a URL through libcurl, within a deadline: for the spec's
 * notify.webhook (`ddpjob notify`). The URL is a secret (a Slack webhook's path is its key): no
 * error says it. Only http and https are followed, and no redirect. */
#ifndef DDPJOB_WEBHOOK_H
#define DDPJOB_WEBHOOK_H

#include "runtime/base/ddp_error.h"

/* POSTs body (application/json) to url within timeout_ms in all; 0 when the receiver answered
 * with a 2xx status (*http_status gets it, 0 when none came), else -1 with err saying why
 * ("no answer within 10 s", "answered HTTP 500"). */
int webhook_post(const char *url, const char *body, long timeout_ms, long *http_status,
                 ddp_error_t *err);

#endif
