/* ignore_rules: which files of a job's folder stay behind when it is uploaded to a cluster, in
 * .gitignore's words: the defaults (.git/, .ddpjob/ with the job records, __pycache__/, the
 * checkpoints: checkpoints/, *.ckpt, *.ddpt) and the
 * folder's own .ddpjobignore, one pattern a line: `#` comments; a trailing `/` matches folders
 * only; a pattern with a `/` is matched against the path from the folder (a leading `/` anchors
 * it there), one without against each name at any depth; `*`, `?` and `[...]` as in fnmatch
 * (`**` is a `*` that also crosses `/`); a leading `!` takes a path back in. The last pattern
 * that matches decides. */
#ifndef DDPJOB_IGNORE_RULES_H
#define DDPJOB_IGNORE_RULES_H

#include <stdbool.h>
#include <stddef.h>

#include "runtime/base/ddp_error.h"

typedef struct {
    char *pattern; /* as written, less the '!', the leading and the trailing '/' */
    bool negated, dirs_only, anchored;
} ignore_rule_t;

typedef struct {
    ignore_rule_t *rules;
    size_t count;
} ignore_rules_t;

/* The defaults, then the lines of `text` (NULL: none). */
int ignore_rules_parse(const char *text, ignore_rules_t *r, ddp_error_t *err);

/* Whether `path` (relative, '/'-separated, no leading '/') is left behind. */
bool ignore_rules_skip(const ignore_rules_t *r, const char *path, bool is_dir);

void ignore_rules_free(ignore_rules_t *r);

#endif
