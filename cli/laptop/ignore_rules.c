#include "cli/laptop/ignore_rules.h"

#include <fnmatch.h>
#include <stdlib.h>
#include <string.h>

/* Checkpoints by the names ddp-train and PyTorch Lightning give them: outputs, not inputs. */
static const char defaults[] = ".git/\n.ddpjob/\n__pycache__/\ncheckpoints/\n*.ckpt\n*.ddpt\n";

static int add(ignore_rules_t *r, const char *line, size_t len, ddp_error_t *err)
{
    bool negated = len && line[0] == '!';
    if (negated)
        line++, len--;
    bool dirs_only = len && line[len - 1] == '/';
    if (dirs_only)
        len--;
    bool anchored = len && line[0] == '/';
    if (anchored)
        line++, len--;
    if (!len)
        return 0;
    ignore_rule_t *grown = realloc(r->rules, (r->count + 1) * sizeof *grown);
    if (!grown)
        return ddp_error_set(err, "out of memory");
    r->rules = grown;
    ignore_rule_t *rule = &r->rules[r->count];
    if (!(rule->pattern = strndup(line, len)))
        return ddp_error_set(err, "out of memory");
    rule->negated = negated;
    rule->dirs_only = dirs_only;
    /* A '/' inside the pattern anchors it too, as in .gitignore. */
    rule->anchored = anchored || strchr(rule->pattern, '/');
    r->count++;
    return 0;
}

static int add_lines(ignore_rules_t *r, const char *text, ddp_error_t *err)
{
    for (const char *line = text; line && *line;) {
        size_t len = strcspn(line, "\n");
        size_t end = len;
        while (end && (line[end - 1] == ' ' || line[end - 1] == '\r' || line[end - 1] == '\t'))
            end--;
        if (end && line[0] != '#' && add(r, line, end, err))
            return -1;
        line += len + (line[len] == '\n');
    }
    return 0;
}

int ignore_rules_parse(const char *text, ignore_rules_t *r, ddp_error_t *err)
{
    memset(r, 0, sizeof *r);
    if (add_lines(r, defaults, err) || add_lines(r, text, err)) {
        ignore_rules_free(r);
        return -1;
    }
    return 0;
}

/* fnmatch, with a pattern holding `**` matched without FNM_PATHNAME: its stars cross folders. */
static bool matches(const char *pattern, const char *path, bool whole_path)
{
    int flags = whole_path && !strstr(pattern, "**") ? FNM_PATHNAME : 0;
    return fnmatch(pattern, path, flags) == 0;
}

bool ignore_rules_skip(const ignore_rules_t *r, const char *path, bool is_dir)
{
    const char *name = strrchr(path, '/');
    name = name ? name + 1 : path;
    bool skip = false;
    for (const ignore_rule_t *rule = r->rules; rule < r->rules + r->count; rule++) {
        if (rule->dirs_only && !is_dir)
            continue;
        if (rule->anchored ? matches(rule->pattern, path, true)
                           : matches(rule->pattern, name, false))
            skip = !rule->negated;
    }
    return skip;
}

void ignore_rules_free(ignore_rules_t *r)
{
    for (size_t i = 0; i < r->count; i++)
        free(r->rules[i].pattern);
    free(r->rules);
    memset(r, 0, sizeof *r);
}
