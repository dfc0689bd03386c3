#include "cli/remote/ignore_rules.h"

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
    size_t n = r->count + 1;
    char **patterns = realloc(r->patterns, n * sizeof *patterns);
    if (patterns)
        r->patterns = patterns;
    bool *flags[3] = {realloc(r->negated, n), realloc(r->dirs_only, n), realloc(r->anchored, n)};
    if (flags[0])
        r->negated = flags[0];
    if (flags[1])
        r->dirs_only = flags[1];
    if (flags[2])
        r->anchored = flags[2];
    char *pattern = strndup(line, len);
    if (!patterns || !flags[0] || !flags[1] || !flags[2] || !pattern) {
        free(pattern);
        return ddp_error_set(err, "out of memory");
    }
    r->patterns[r->count] = pattern;
    r->negated[r->count] = negated;
    r->dirs_only[r->count] = dirs_only;
    /* A '/' inside the pattern anchors it too, as in .gitignore. */
    r->anchored[r->count] = anchored || strchr(pattern, '/');
    r->count = n;
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

/* fnmatch with `**` crossing '/': each `**` tried as a `*` that may span folders. */
static bool matches(const char *pattern, const char *path, bool whole_path)
{
    const char *stars = strstr(pattern, "**");
    if (!stars)
        return fnmatch(pattern, path, whole_path ? FNM_PATHNAME : 0) == 0;
    return fnmatch(pattern, path, 0) == 0;
}

bool ignore_rules_skip(const ignore_rules_t *r, const char *path, bool is_dir)
{
    const char *name = strrchr(path, '/');
    name = name ? name + 1 : path;
    bool skip = false;
    for (size_t i = 0; i < r->count; i++) {
        if (r->dirs_only[i] && !is_dir)
            continue;
        if (r->anchored[i] ? matches(r->patterns[i], path, true)
                           : matches(r->patterns[i], name, false))
            skip = !r->negated[i];
    }
    return skip;
}

void ignore_rules_free(ignore_rules_t *r)
{
    for (size_t i = 0; i < r->count; i++)
        free(r->patterns[i]);
    free(r->patterns);
    free(r->negated);
    free(r->dirs_only);
    free(r->anchored);
    memset(r, 0, sizeof *r);
}
