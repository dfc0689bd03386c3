#include "runtime/job/membership.h"

#include <limits.h>
#include <stdlib.h>

int ddp_members_reserve(ddp_members_t *m, int nslots)
{
    if (nslots <= m->nslots)
        return 0;
    int *role = realloc(m->role, (size_t)nslots * sizeof *role);
    if (!role)
        return -1;
    for (int i = m->nslots; i < nslots; i++)
        role[i] = MEMBER_ABSENT;
    m->role = role;
    m->nslots = nslots;
    return 0;
}

void ddp_members_free(ddp_members_t *m)
{
    free(m->role);
    *m = (ddp_members_t){0};
}

void ddp_members_exclude(ddp_members_t *m, int slot)
{
    if (slot >= 0 && slot < m->nslots)
        m->role[slot] = MEMBER_EXCLUDED;
}

int ddp_members_slot_of(const ddp_members_t *m, int rank)
{
    for (int i = 0; i < m->nslots; i++)
        if (m->role[i] == rank)
            return i;
    return -1;
}

int ddp_members_expected(const ddp_members_t *m)
{
    int n = 0;
    for (int i = 0; i < m->nslots; i++)
        n += m->role[i] >= 0 || m->role[i] == MEMBER_STANDBY;
    return n;
}

static int joined_at(const unsigned char *joined, int given, int slot)
{
    return slot < given && joined[slot];
}

/* The order in which joined slots fill the node ranks left open: nodes that ran before (by
 * their old rank) ahead of standbys and newcomers (by slot). */
static long fill_order(const int *role, int slot)
{
    return role[slot] >= 0 ? role[slot] : (long)INT_MAX + slot;
}

int ddp_members_form(ddp_members_t *m, const unsigned char *joined, int nslots, int min, int max,
                     ddp_error_t *err)
{
    int given = nslots;
    if (ddp_members_reserve(m, nslots))
        return ddp_error_set(err, "out of memory");
    nslots = m->nslots; /* slots known before and not given count as not joined */
    int available = 0;
    for (int i = 0; i < nslots; i++)
        available += joined_at(joined, given, i) && m->role[i] != MEMBER_EXCLUDED;
    int active = available < max ? available : max;
    if (nslots < 1 || !joined_at(joined, given, 0) || m->role[0] == MEMBER_EXCLUDED)
        return ddp_error_set(err, "node 0, which serves the store, is not among the nodes");
    if (active < min)
        return ddp_error_set(err, "%d node(s) can run workers, and the job needs %d%s", available,
                             min,
                             m->formed ? " (no standby left to take a lost node's place)" : "");
    int *next = malloc((size_t)nslots * sizeof *next);
    unsigned char *taken = calloc((size_t)active, 1);
    if (!next || !taken) {
        free(next);
        free(taken);
        return ddp_error_set(err, "out of memory");
    }
    for (int i = 0; i < nslots; i++) {
        int was_member = m->role[i] >= 0 || m->role[i] == MEMBER_STANDBY;
        next[i] = m->role[i] == MEMBER_EXCLUDED || (was_member && !joined_at(joined, given, i))
                      ? MEMBER_EXCLUDED
                  : joined_at(joined, given, i) ? MEMBER_STANDBY
                                                : MEMBER_ABSENT;
    }
    next[0] = 0;
    taken[0] = 1;
    for (int i = 1; i < nslots; i++)
        if (next[i] == MEMBER_STANDBY && m->role[i] > 0 && m->role[i] < active) {
            next[i] = m->role[i];
            taken[m->role[i]] = 1;
        }
    for (int rank = 1; rank < active; rank++) {
        if (taken[rank])
            continue;
        int best = -1;
        for (int i = 1; i < nslots; i++)
            if (next[i] == MEMBER_STANDBY &&
                (best < 0 || fill_order(m->role, i) < fill_order(m->role, best)))
                best = i;
        next[best] = rank;
    }
    free(m->role);
    free(taken);
    m->role = next;
    m->formed++;
    return active;
}
