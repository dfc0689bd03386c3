#include "cli/launch/launch_hosts.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/base/ddp_file.h"
#include "runtime/base/ddp_parse.h"

/* One more job for a host is already a lot: far beyond any node's GPU or core count. */
#define MAX_SLOTS 4096

static int add_host(launch_hosts_t *h, const char *name, size_t len, long slots, int given,
                    ddp_error_t *err)
{
    for (size_t i = 0; i < h->count; i++)
        if (strlen(h->hosts[i].name) == len && !strncmp(h->hosts[i].name, name, len)) {
            h->hosts[i].slots += (int)slots;
            h->hosts[i].slots_given = 1;
            if (h->hosts[i].slots > MAX_SLOTS)
                return ddp_error_set(err, "host %s: more than %d slots", h->hosts[i].name,
                                     MAX_SLOTS);
            return 0;
        }
    launch_host_t *grown = realloc(h->hosts, (h->count + 1) * sizeof *grown);
    if (!grown)
        return ddp_error_set(err, "out of memory");
    h->hosts = grown;
    char *copy = strndup(name, len);
    if (!copy)
        return ddp_error_set(err, "out of memory");
    h->hosts[h->count++] = (launch_host_t){.name = copy, .slots = (int)slots, .slots_given = given};
    return 0;
}

static int valid_name(const char *name, size_t len)
{
    if (len == 0 || len > 253)
        return 0;
    for (size_t i = 0; i < len; i++)
        if (!isalnum((unsigned char)name[i]) && !strchr("-._@", name[i]))
            return 0;
    return 1;
}

/* One entry: NAME, NAME:N or (hostfile) NAME slots=N. */
static int add_entry(launch_hosts_t *h, const char *entry, const char *where, ddp_error_t *err)
{
    size_t len = strcspn(entry, ": \t");
    const char *rest = entry + len;
    long slots = 1;
    int given = 0;
    while (*rest == ' ' || *rest == '\t')
        rest++;
    if (*rest == ':' || !strncmp(rest, "slots=", 6)) {
        const char *count = *rest == ':' ? rest + 1 : rest + 6;
        size_t count_len = strcspn(count, " \t");
        char text[32];
        snprintf(text, sizeof text, "%.*s", (int)(count_len < 31 ? count_len : 31), count);
        if (ddp_parse_long(text, 1, MAX_SLOTS, &slots))
            return ddp_error_set(err, "%s: \"%s\": the slots must be a whole number from 1 to %d",
                                 where, entry, MAX_SLOTS);
        given = 1;
        rest = count + count_len;
        while (*rest == ' ' || *rest == '\t')
            rest++;
    }
    if (!valid_name(entry, len) || *rest)
        return ddp_error_set(err, "%s: \"%s\" is not HOST, HOST:SLOTS or HOST slots=SLOTS", where,
                             entry);
    return add_host(h, entry, len, slots, given, err);
}

int launch_hosts_from_list(const char *list, launch_hosts_t *out, ddp_error_t *err)
{
    *out = (launch_hosts_t){0};
    char *copy = strdup(list), *save = NULL;
    if (!copy)
        return ddp_error_set(err, "out of memory");
    int rc = 0;
    for (char *entry = strtok_r(copy, ",", &save); entry && !rc; entry = strtok_r(NULL, ",", &save))
        rc = add_entry(out, entry, "--hosts", err);
    free(copy);
    if (!rc && out->count == 0)
        rc = ddp_error_set(err, "--hosts: no host given");
    if (rc)
        launch_hosts_free(out);
    return rc;
}

int launch_hosts_from_file(const char *path, launch_hosts_t *out, ddp_error_t *err)
{
    *out = (launch_hosts_t){0};
    char *text = ddp_read_file(path, NULL, err);
    if (!text)
        return -1;
    int rc = 0, line_no = 0;
    for (char *line = text, *next; line && !rc; line = next) {
        next = strchr(line, '\n');
        if (next)
            *next++ = '\0';
        line_no++;
        line[strcspn(line, "#\r")] = '\0';
        while (*line == ' ' || *line == '\t')
            line++;
        size_t len = strlen(line);
        while (len && (line[len - 1] == ' ' || line[len - 1] == '\t'))
            line[--len] = '\0';
        if (!len)
            continue;
        char where[4200];
        snprintf(where, sizeof where, "%s:%d", path, line_no);
        rc = add_entry(out, line, where, err);
    }
    free(text);
    if (!rc && out->count == 0)
        rc = ddp_error_set(err, "%s: no host in it", path);
    if (rc)
        launch_hosts_free(out);
    return rc;
}

void launch_hosts_free(launch_hosts_t *h)
{
    for (size_t i = 0; h && i < h->count; i++)
        free(h->hosts[i].name);
    if (h) {
        free(h->hosts);
        *h = (launch_hosts_t){0};
    }
}
