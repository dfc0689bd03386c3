/* What the agent finds out about a worker's end: a consequence told by the words the real
 * libraries print when a peer went first, and the OOM kill's memory cgroup found from
 * /proc/PID/cgroup and mountinfo as the kernel writes them (v1, v2, a container's mount). */
#include <string.h>

#include "agent/findings/cause.h"
#include "agent/findings/oom.h"
#include "tests/unit/tap.h"

/* This machine's: cgroup v1 controllers, and the unified hierarchy beside them. */
static const char *const MOUNTS_V1 =
    "31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n"
    "32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu\n"
    "35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n"
    "41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n";
static const char *const GROUPS_V1 = "5:devices:/\n4:memory:/slurm/uid_0/job_7/step_0\n"
                                     "1:cpu:/\n0::/\n";

int main(void)
{
    char evidence[128];
    ok(cause_peer_lost("RuntimeError: [./gloo/transport/tcp/pair.cc:598] Connection closed by "
                       "peer [127.0.0.1]:8619",
                       evidence, sizeof evidence),
       "gloo's closed connection is a consequence");
    is_str(evidence, "Connection closed by peer", "the words that say so");
    ok(cause_peer_lost("RuntimeError: [./gloo/transport/tcp/pair.cc:589] Read error "
                       "[127.0.0.1]:3752: Connection reset by peer",
                       evidence, sizeof evidence),
       "gloo's reset connection is a consequence");
    ok(cause_peer_lost("ddp-train: all_reduce: rank 1 closed the connection (exited or died)",
                       evidence, sizeof evidence),
       "libddp's lost rank is a consequence");
    ok(cause_peer_lost("[Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=3)",
                       evidence, sizeof evidence),
       "PyTorch's NCCL watchdog timeout is a consequence");
    ok(!cause_peer_lost("rank 1: failing on purpose", evidence, sizeof evidence),
       "a worker's own error is not");
    ok(!cause_peer_lost("RuntimeError: CUDA error: an illegal memory access was encountered",
                        evidence, sizeof evidence),
       "a CUDA error is not");
    ok(!cause_peer_lost("ConnectionRefusedError: [Errno 111] Connection refused", evidence,
                        sizeof evidence),
       "a refused connection (nothing listening yet) is not");
    /* The GPU's memory, in the words PyTorch 2.11, its CUDA checks, NCCL and ddp-train print. */
    char gpu[512];
    ok(cause_gpu_out_of_memory("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate "
                               "200.00 GiB. GPU 0 has a total capacity of 139.81 GiB",
                               gpu, sizeof gpu),
       "PyTorch's allocator running out is a GPU out of memory");
    is_str(gpu,
           "CUDA out of memory. Tried to allocate 200.00 GiB. GPU 0 has a total capacity of "
           "139.81 GiB",
           "the line from the phrase on, which names the GPU");
    ok(cause_gpu_out_of_memory("RuntimeError: CUDA error: out of memory", gpu, sizeof gpu),
       "a CUDA call's out of memory is");
    ok(cause_gpu_out_of_memory("misc/nccl.cc:12 NCCL WARN Cuda failure 'out of memory'", gpu,
                               sizeof gpu),
       "NCCL's is");
    ok(cause_gpu_out_of_memory("ddp-train train: rank 0: out of GPU memory on CUDA device 0 (PCI "
                               "0000:19:00.0, 0.3 of 139.8 GiB free) for the model's 1 parameters",
                               gpu, sizeof gpu),
       "ddp-train's is");
    ok(!cause_gpu_out_of_memory("MemoryError: out of memory", gpu, sizeof gpu) &&
           !cause_gpu_out_of_memory("ddp-train train: rank 0: out of host memory for the model's",
                                    gpu, sizeof gpu),
       "the host's memory is not the GPU's");
    ok(cause_from_name(cause_name(CAUSE_GPU_OUT_OF_MEMORY)) == CAUSE_GPU_OUT_OF_MEMORY,
       "the GPU's out of memory has a name that reads back");
    ok(cause_from_name(cause_name(CAUSE_CONSEQUENCE)) == CAUSE_CONSEQUENCE &&
           cause_from_name(cause_name(CAUSE_OUT_OF_MEMORY)) == CAUSE_OUT_OF_MEMORY &&
           cause_from_name(cause_name(CAUSE_OWN)) == CAUSE_OWN,
       "each cause's name reads back");
    ok(cause_from_name("oom") == -1, "an unknown name is refused");

    char dir[OOM_DIR_MAX], root[OOM_DIR_MAX];
    int version = 0;
    ok(oom_group_dir(GROUPS_V1, MOUNTS_V1, dir, root, sizeof dir, &version) == 0 && version == 1,
       "v1: the memory controller's hierarchy");
    is_str(dir, "/sys/fs/cgroup/memory/slurm/uid_0/job_7/step_0", "v1: the group's folder");
    is_str(root, "/sys/fs/cgroup/memory", "v1: where its limits stop");
    ok(oom_group_dir("12:cpuset:/\n4:cpu,memory:/a\n", MOUNTS_V1, dir, root, sizeof dir,
                     &version) == 0,
       "v1: memory mounted with another controller");
    is_str(dir, "/sys/fs/cgroup/memory/a", "v1: its folder");
    ok(oom_group_dir("4:memory:/\n", MOUNTS_V1, dir, root, sizeof dir, &version) == 0,
       "v1: the root group");
    is_str(dir, "/sys/fs/cgroup/memory", "v1: the root group is the mount point");
    ok(oom_group_dir("0::/user.slice/user-1000.slice/session-3.scope\n",
                     "30 1 0:26 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw,nsdelegate\n", dir, root,
                     sizeof dir, &version) == 0 &&
           version == 2,
       "v2: the unified hierarchy");
    is_str(dir, "/sys/fs/cgroup/user.slice/user-1000.slice/session-3.scope", "v2: its folder");
    ok(oom_group_dir("4:memory:/docker/abc/inner\n",
                     "35 31 0:32 /docker/abc /sys/fs/cgroup/memory ro - cgroup cgroup rw,memory\n",
                     dir, root, sizeof dir, &version) == 0,
       "a container's mount of part of the hierarchy");
    is_str(dir, "/sys/fs/cgroup/memory/inner", "its folder under the container's mount");
    ok(oom_group_dir("0::/\n", "32 31 0:29 / /sys/fs/cgroup/cpu rw - cgroup cgroup rw,cpu\n", dir,
                     root, sizeof dir, &version) == -1,
       "no memory hierarchy mounted: none");

    ok(oom_counter("oom_kill_disable 0\nunder_oom 0\noom_kill 3\n", "oom_kill") == 3,
       "v1 memory.oom_control: oom_kill, not oom_kill_disable");
    ok(oom_counter("low 0\nhigh 0\nmax 12\noom 2\noom_kill 1\noom_group_kill 0\n", "oom_kill") == 1,
       "v2 memory.events: oom_kill");
    ok(oom_counter("under_oom 0\n", "oom_kill") == -1, "an old kernel without the counter: none");

    char line[512];
    oom_kill_t k = {.by_group = 1,
                    .group = "/slurm/job_7",
                    .limit = 190LL << 30,
                    .peak = (190LL << 30) - (1LL << 20)};
    oom_describe(&k, line, sizeof line);
    is_str(line,
           "killed by the out-of-memory killer: its memory cgroup's limit 190 GiB was reached "
           "(/slurm/job_7, peak 190.0 GiB)",
           "the limit and the peak, in binary units");
    k.limit = -1;
    oom_describe(&k, line, sizeof line);
    ok(strstr(line, "the node ran out of memory") != NULL, "no limit: the node ran out");
    k.by_group = 0;
    oom_describe(&k, line, sizeof line);
    is_str(line, "killed by the out-of-memory killer: the node ran out of memory",
           "the machine's count only");
    return done_testing();
}
