/* Which PCI device is a worker's GPU, and which CPUs are near it: binding.c read against a tree
 * laid out as the kernel's sysfs and NVIDIA's driver lay theirs out (two GPUs with their audio
 * functions, another vendor's display, one GPU on NUMA node 1 and one the firmware gives none). */
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/workers/binding.h"
#include "runtime/base/ddp_file.h"
#include "tests/unit/tap.h"

static char root[64];

/* Writes text at root/path, making the folders above it. */
static void put(const char *path, const char *text)
{
    char full[512];
    ddp_error_t err;
    snprintf(full, sizeof full, "%s/%s", root, path);
    *strrchr(full, '/') = '\0';
    if (ddp_make_dirs(full, 0755, &err))
        printf("# %s\n", err.msg);
    full[strlen(full)] = '/';
    FILE *f = fopen(full, "w");
    if (f) {
        fputs(text, f);
        fclose(f);
    }
}

static void pci_device(const char *address, const char *vendor, const char *class,
                       const char *numa_node, const char *local_cpulist)
{
    char path[256];
    const char *files[][2] = {{"vendor", vendor},
                              {"class", class},
                              {"numa_node", numa_node},
                              {"local_cpulist", local_cpulist}};
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        snprintf(path, sizeof path, "sys/bus/pci/devices/%s/%s", address, files[i][0]);
        put(path, files[i][1]);
    }
}

static int cpus_are(const cpu_set_t *set, int lo, int hi)
{
    for (int c = 0; c < CPU_SETSIZE; c++)
        if (CPU_ISSET(c, set) != (c >= lo && c <= hi))
            return 0;
    return 1;
}

int main(void)
{
    snprintf(root, sizeof root, "/tmp/test_binding.XXXXXX");
    if (!mkdtemp(root))
        return 1;
    pci_device("0000:3b:00.0", "0x10de\n", "0x030200\n", "1\n", "16-31\n");
    pci_device("0000:3b:00.1", "0x10de\n", "0x040300\n", "1\n", "16-31\n");
    pci_device("0000:19:00.0", "0x10de\n", "0x030200\n", "-1\n", "0-3,8\n");
    pci_device("0000:19:00.1", "0x10de\n", "0x040300\n", "-1\n", "0-3,8\n");
    pci_device("0000:00:02.0", "0x8086\n", "0x030000\n", "0\n", "0-15\n");
    put("sys/devices/system/node/node1/cpulist", "16-31\n");
    put("proc/driver/nvidia/gpus/0000:3b:00.0/information",
        "Model: \t\t NVIDIA H100 80GB HBM3\nIRQ:   \t\t 42\nGPU UUID: \t "
        "GPU-8f3c2d1e-1111-2222-3333-444455556666\n");
    put("proc/driver/nvidia/gpus/0000:19:00.0/information",
        "Model: \t\t NVIDIA H100 80GB HBM3\nGPU UUID: \t "
        "GPU-0a0b0c0d-1111-2222-3333-444455556666\n");

    char pci[BINDING_PCI_MAX];
    ok(binding_gpu_pci_at(root, "0", pci, sizeof pci) == 0, "CUDA's GPU 0 is found");
    is_str(pci, "0000:19:00.0", "GPU 0 is the NVIDIA GPU lowest in PCI address order");
    ok(binding_gpu_pci_at(root, "1", pci, sizeof pci) == 0, "GPU 1 is found");
    is_str(pci, "0000:3b:00.0", "GPU 1 is the next GPU, not its bus neighbour's audio function");
    ok(binding_gpu_pci_at(root, "2", pci, sizeof pci) == -1, "there is no GPU 2");
    ok(binding_gpu_pci_at(root, "GPU-8f3c2d1e", pci, sizeof pci) == 0,
       "a GPU named by a prefix of its UUID is found");
    is_str(pci, "0000:3b:00.0", "through the driver's information file");
    ok(binding_gpu_pci_at(root, "GPU-ffff", pci, sizeof pci) == -1, "an unknown UUID is not");
    ok(binding_gpu_pci_at(root, "MIG-8f3c2d1e-1111-2222-3333-444455556666", pci, sizeof pci) == -1,
       "a MIG instance has no PCI device of its own to place by");

    cpu_set_t set;
    ok(binding_pci_cpus_at(root, "0000:3b:00.0", &set) == 0 && cpus_are(&set, 16, 31),
       "a GPU on NUMA node 1 gets node 1's CPUs");
    ok(binding_pci_cpus_at(root, "0000:19:00.0", &set) == 0 && cpus_are(&set, 0, 3) == 0 &&
           CPU_ISSET(8, &set) && CPU_COUNT(&set) == 5,
       "a GPU the firmware gives no node gets its local_cpulist (0-3,8)");
    ok(binding_pci_cpus_at(root, "0000:5e:00.0", &set) == -1, "a device not there has none");

    char command[128];
    snprintf(command, sizeof command, "rm -rf %s", root);
    if (system(command))
        printf("# could not remove %s\n", root);
    return done_testing();
}
