#include "cli/view/webhook.h"

#include <curl/curl.h>
#include <stdlib.h>
#include <unistd.h>

/* How long the connection may take, at most, of the whole deadline. */
#define CONNECT_MS_MAX 5000L

static size_t discard(char *data, size_t size, size_t n, void *ctx)
{
    (void)data;
    (void)ctx;
    return size * n;
}

/* The CA certificates HTTPS checks the server against. A libcurl built for this system knows them;
 * the cluster build's (static, for any Linux) has none, so then SSL_CERT_FILE, else the bundle
 * where the usual distributions keep it (Debian and Ubuntu, RHEL and Rocky, SUSE, Alpine). */
static const char *ca_bundle(void)
{
    if (curl_version_info(CURLVERSION_NOW)->cainfo)
        return NULL;
    const char *env = getenv("SSL_CERT_FILE");
    if (env && *env)
        return env;
    static const char *const places[] = {"/etc/ssl/certs/ca-certificates.crt",
                                         "/etc/pki/tls/certs/ca-bundle.crt",
                                         "/etc/ssl/ca-bundle.pem", "/etc/ssl/cert.pem"};
    for (size_t i = 0; i < sizeof places / sizeof *places; i++)
        if (access(places[i], R_OK) == 0)
            return places[i];
    return NULL;
}

int webhook_post(const char *url, const char *body, long timeout_ms, long *http_status,
                 ddp_error_t *err)
{
    *http_status = 0;
    static int ready;
    if (!ready && curl_global_init(CURL_GLOBAL_DEFAULT) == CURLE_OK)
        ready = 1;
    CURL *curl = ready ? curl_easy_init() : NULL;
    struct curl_slist *headers = curl_slist_append(NULL, "Content-Type: application/json");
    if (!curl || !headers) {
        curl_slist_free_all(headers);
        if (curl)
            curl_easy_cleanup(curl);
        return ddp_error_set(err, "libcurl cannot start");
    }
    curl_easy_setopt(curl, CURLOPT_URL, url);
    curl_easy_setopt(curl, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(curl, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, timeout_ms);
    curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS,
                     timeout_ms < CONNECT_MS_MAX ? timeout_ms : CONNECT_MS_MAX);
    curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(curl, CURLOPT_USERAGENT, "ddpjob/" DDPJOB_VERSION);
    curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, discard);
    const char *cas = ca_bundle();
    if (cas)
        curl_easy_setopt(curl, CURLOPT_CAINFO, cas);
    CURLcode rc = curl_easy_perform(curl);
    curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, http_status);
    curl_slist_free_all(headers);
    curl_easy_cleanup(curl);
    if (rc == CURLE_OPERATION_TIMEDOUT)
        return ddp_error_set(err, "no answer within %.0f s", timeout_ms / 1000.0);
    if (rc != CURLE_OK)
        return ddp_error_set(err, "%s", curl_easy_strerror(rc));
    if (*http_status < 200 || *http_status > 299)
        return ddp_error_set(err, "answered HTTP %ld", *http_status);
    return 0;
}
