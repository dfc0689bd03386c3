#include "runtime/pg/pg_shm_heap.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#define PAGE_BYTES 4096u
/* All of a host's heaps together stay within this much address space. */
#define ADDRESS_SPACE_BYTES (16ull << 40)

typedef struct {
    uint64_t offset, bytes;
} extent_t;

struct pg_shm_heap {
    int n, me, fd;
    uint64_t size; /* of each heap */
    unsigned char **bases;
    pthread_mutex_t lock; /* pg_alloc may run beside a collective on another thread */
    extent_t *used;       /* ascending offsets */
    size_t nused, used_cap;
};

pg_shm_heap_t *pg_shm_heap_create(int n, int me, ddp_error_t *err)
{
    pg_shm_heap_t *h = calloc(1, sizeof *h);
    if (!h || !(h->bases = calloc((size_t)n, sizeof *h->bases))) {
        free(h);
        ddp_error_set(err, "out of memory");
        return NULL;
    }
    h->n = n;
    h->me = me;
    pthread_mutex_init(&h->lock, NULL);
    long pages = sysconf(_SC_PHYS_PAGES);
    uint64_t ram = (uint64_t)(pages > 0 ? pages : 1) * PAGE_BYTES;
    uint64_t most = ADDRESS_SPACE_BYTES / (uint64_t)n;
    /* Within a file size limit too (some sites set one): past it the heap is full and pg_alloc
     * falls back to private memory. */
    struct rlimit fsize;
    if (getrlimit(RLIMIT_FSIZE, &fsize) == 0 && fsize.rlim_cur != RLIM_INFINITY &&
        fsize.rlim_cur < most)
        most = fsize.rlim_cur;
    h->size = (ram < most ? ram : most) & ~(uint64_t)(PAGE_BYTES - 1);
    if (h->size < PAGE_BYTES)
        h->size = PAGE_BYTES;
    if ((h->fd = (int)syscall(SYS_memfd_create, "ddp-pg-heap", MFD_CLOEXEC)) < 0 ||
        ftruncate(h->fd, (off_t)h->size) < 0) {
        ddp_error_set(err, "cannot make this rank's %llu-byte heap: %s",
                      (unsigned long long)h->size, strerror(errno));
        pg_shm_heap_destroy(h);
        return NULL;
    }
    return h;
}

int pg_shm_heap_fd(const pg_shm_heap_t *h)
{
    return h->fd;
}

int pg_shm_heap_map(pg_shm_heap_t *h, const int *fds, ddp_error_t *err)
{
    for (int i = 0; i < h->n; i++) {
        int fd = i == h->me ? h->fd : fds[i];
        void *base = mmap(NULL, h->size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_NORESERVE, fd, 0);
        if (base == MAP_FAILED)
            return ddp_error_set(err, "cannot map rank %d's heap: %s", i, strerror(errno));
        h->bases[i] = base;
    }
    close(h->fd);
    h->fd = -1;
    return 0;
}

void pg_shm_heap_destroy(pg_shm_heap_t *h)
{
    if (!h)
        return;
    for (int i = 0; i < h->n; i++)
        if (h->bases[i])
            munmap(h->bases[i], h->size);
    if (h->fd >= 0)
        close(h->fd);
    pthread_mutex_destroy(&h->lock);
    free(h->bases);
    free(h->used);
    free(h);
}

void *pg_shm_heap_alloc(pg_shm_heap_t *h, size_t bytes)
{
    uint64_t len = ((uint64_t)(bytes ? bytes : 1) + PAGE_BYTES - 1) & ~(uint64_t)(PAGE_BYTES - 1);
    void *p = NULL;
    pthread_mutex_lock(&h->lock);
    if (h->nused == h->used_cap) {
        size_t cap = h->used_cap ? h->used_cap * 2 : 16;
        extent_t *used = realloc(h->used, cap * sizeof *used);
        if (!used)
            goto out;
        h->used = used;
        h->used_cap = cap;
    }
    /* First fit: the gap before each allocation, then the space after the last. */
    uint64_t at = 0;
    size_t i = 0;
    for (; i < h->nused && h->used[i].offset - at < len; i++)
        at = h->used[i].offset + h->used[i].bytes;
    if (h->size - at < len)
        goto out;
    memmove(&h->used[i + 1], &h->used[i], (h->nused - i) * sizeof *h->used);
    h->used[i] = (extent_t){at, len};
    h->nused++;
    p = h->bases[h->me] + at;
out:
    pthread_mutex_unlock(&h->lock);
    return p;
}

int pg_shm_heap_free(pg_shm_heap_t *h, void *p)
{
    uint64_t offset;
    if (!pg_shm_heap_offset(h, p, 0, &offset))
        return 0;
    pthread_mutex_lock(&h->lock);
    for (size_t i = 0; i < h->nused; i++)
        if (h->used[i].offset == offset) {
            /* The pages go back to the system (for every rank's mapping at once). */
            madvise(p, h->used[i].bytes, MADV_REMOVE);
            memmove(&h->used[i], &h->used[i + 1], (h->nused - i - 1) * sizeof *h->used);
            h->nused--;
            break;
        }
    pthread_mutex_unlock(&h->lock);
    return 1;
}

int pg_shm_heap_offset(const pg_shm_heap_t *h, const void *p, size_t bytes, uint64_t *offset)
{
    const unsigned char *mine = h->bases[h->me], *q = p;
    if (!mine || q < mine || (uint64_t)(q - mine) >= h->size ||
        h->size - (uint64_t)(q - mine) < bytes)
        return 0;
    *offset = (uint64_t)(q - mine);
    return 1;
}

unsigned char *pg_shm_heap_at(const pg_shm_heap_t *h, int i, uint64_t offset)
{
    return h->bases[i] + offset;
}
