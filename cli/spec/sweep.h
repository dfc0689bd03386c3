/* sweep: a spec's `sweep:` block, many trials of one spec. The trials are grid:'s product (its
 * first name varying slowest) then trials:'s list, each a set of name: value (pack: {nodes: N,
 * allocations: K, walltime: T} runs them inside K held allocations of N nodes, each held T a
 * link, ddpjob(1) SWEEPS); trial K's spec is the file with each `{name}` in command, env, train,
 * log_dir, workdir and name replaced by its value (`{{` and `}}` for braces; `${VAR}` is the
 * shell's and left alone), and DDPJOB_TRIAL and DDPJOB_TRIAL_PARAMS (JSON) in its env. Read from
 * the spec's YAML document before its fields, so that the substituted values are typed and
 * checked as if the file held them. */
#ifndef DDPJOB_SWEEP_H
#define DDPJOB_SWEEP_H

#include <stddef.h>
#include <stdint.h>
#include <yaml.h>

#include "cli/spec/diag.h"

/* The variables each trial's workers get: its number, and its parameters as JSON. */
#define SWEEP_TRIAL_ENV "DDPJOB_TRIAL"
#define SWEEP_PARAMS_ENV "DDPJOB_TRIAL_PARAMS"
/* pack:'s nodes and allocations at most. */
#define SWEEP_PACK_MAX 4096

typedef struct {
    char **names; /* the parameters, in the order grid: then trials: name them */
    size_t nnames;
    char ***values; /* values[trial][name]: the YAML text, NULL when the trial gives none */
    size_t ntrials;
    long parallel;            /* at most this many trials at once; 0: all */
    char objective[64];       /* objective: {metric: NAME, goal: min|max}: NAME ("": none) */
    int maximize;             /* its goal is max */
    long pack_nodes;          /* pack: the trials run in held allocations of this many nodes
                                 (0: each trial a job of its own, as an array or in lanes) */
    long pack_allocations;    /* ... this many of them at once */
    uint64_t pack_walltime_s; /* ... each held this long a link (0: a trial's for each wave) */
    unsigned long line, col;  /* where the block is */
} sweep_t;

/* Reads the sweep: block of the document's root mapping into sw (sw->ntrials 0 without one);
 * problems (an empty list, a value that is not one scalar, duplicate trials, no trial, an
 * objective that is not {metric: NAME, goal: min|max}) into
 * diag. Returns the number of problems. */
size_t sweep_read(yaml_document_t *doc, sweep_t *sw, diag_t *diag);

/* Replaces the placeholders of trial `trial` in the document's fields that take them; a
 * placeholder without a value is a problem. used[i] is set for each parameter a placeholder
 * named. Returns the number of problems. */
size_t sweep_substitute(yaml_document_t *doc, const sweep_t *sw, size_t trial, int *used,
                        diag_t *diag);

/* Says into diag, for parameter `name` that no field taking placeholders names, where a {name}
 * stands in a field that takes none (procs_per_node: "{n}"), and why; 0 when none does. */
size_t sweep_misplaced(yaml_document_t *doc, const char *name, diag_t *diag);

/* DDPJOB_TRIAL_PARAMS's value for `trial`: {"lr": 0.1, "seed": 1}, malloc'd. */
char *sweep_params_json(const sweep_t *sw, size_t trial);

void sweep_free(sweep_t *sw);

#endif
