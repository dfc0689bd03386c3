/* membership: which agents of a job with spare nodes or an elastic world run workers in a round,
 * as node 0 decides it at each rendezvous.
 *
 * Every agent has a slot for the whole job (the node rank its scheduler or launcher gave it, or
 * the one the c10d rendezvous handed out). At each round node 0 takes the slots that joined and
 * makes between `min` and `max` of them active, each with a node rank (its group rank) of that
 * round; the others wait as standbys. An active slot keeps its node rank from round to round
 * when it can, so a standby takes the place of the node it replaces (a spare is node-rank
 * stable); where the world shrinks, the active slots whose ranks fall outside it move into the
 * holes, and where it grows, new slots take the ranks after the last. Slot 0 runs the store and
 * is always node rank 0. A slot lost once is excluded for the rest of the job. */
#ifndef DDP_MEMBERSHIP_H
#define DDP_MEMBERSHIP_H

#include "runtime/base/ddp_error.h"

enum { MEMBER_ABSENT = -1, MEMBER_STANDBY = -2, MEMBER_EXCLUDED = -3 };

typedef struct {
    int nslots;
    int *role;  /* per slot: its node rank in the last round formed, or MEMBER_* */
    int formed; /* rounds formed so far */
} ddp_members_t;

/* Grows m to hold slots 0..nslots-1 (new ones absent). -1 when out of memory. */
int ddp_members_reserve(ddp_members_t *m, int nslots);
void ddp_members_free(ddp_members_t *m);
/* Slot `slot` is lost: never a member again. */
void ddp_members_exclude(ddp_members_t *m, int slot);
/* The slot holding node rank `rank` in the last round formed, or -1. */
int ddp_members_slot_of(const ddp_members_t *m, int rank);
/* Members of the last round formed (active or standby) that are still expected. */
int ddp_members_expected(const ddp_members_t *m);

/* Forms the next round from the slots with joined[slot] set (nslots of them given): between
 * min and max active. Members of the last round that did not join are excluded, as are joined
 * slots already excluded (they stay out). Returns the number of active nodes, or -1 with err
 * naming what is missing (m unchanged). */
int ddp_members_form(ddp_members_t *m, const unsigned char *joined, int nslots, int min, int max,
                     ddp_error_t *err);

#endif
