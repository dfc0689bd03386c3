/* pg_shm_heap: buffers that the other ranks of a host read and write in place (pg_alloc's, on the
 * tcp backend), so that an all_reduce reduces straight out of every rank's own buffer instead of
 * copying it through the segment's stages first.
 *
 * Each rank owns one heap: a memfd reserved at the host's memory size (pages exist only where
 * written, and go back when freed), handed to the host's other ranks when the group forms
 * (pg_shm.c passes the descriptors) and mapped by every one of them. Allocations are page
 * aligned, first fit; a rank names a buffer to its peers by its offset in its own heap. */
#ifndef DDP_PG_SHM_HEAP_H
#define DDP_PG_SHM_HEAP_H

#include <stddef.h>
#include <stdint.h>

#include "runtime/base/ddp_error.h"

typedef struct pg_shm_heap pg_shm_heap_t;

/* This rank's heap (index `me` of the host's n ranks), not yet mapped. */
pg_shm_heap_t *pg_shm_heap_create(int n, int me, ddp_error_t *err);
/* The descriptor to hand to the other ranks (owned by the heap). */
int pg_shm_heap_fd(const pg_shm_heap_t *h);
/* Maps every rank's heap; fds[i] is rank i's (fds[me] is not used). The heap keeps none of
 * them open. */
int pg_shm_heap_map(pg_shm_heap_t *h, const int *fds, ddp_error_t *err);
void pg_shm_heap_destroy(pg_shm_heap_t *h);

void *pg_shm_heap_alloc(pg_shm_heap_t *h, size_t bytes);
/* 1 (and the heap freed it) when p came from pg_shm_heap_alloc, else 0. */
int pg_shm_heap_free(pg_shm_heap_t *h, void *p);
/* Whether [p, p + bytes) lies in this rank's heap; *offset gets where. */
int pg_shm_heap_offset(const pg_shm_heap_t *h, const void *p, size_t bytes, uint64_t *offset);
/* Rank i's heap at `offset`, as mapped here. */
unsigned char *pg_shm_heap_at(const pg_shm_heap_t *h, int i, uint64_t offset);

#endif
