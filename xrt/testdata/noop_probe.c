/*
 * noop_probe.c - what XRT 2.13's no-hardware "noop" driver does, call by
 * call (findings in docs/KERNEL.md, "Host plumbing with the noop driver";
 * TestNoopProbe builds and runs it under -tags xrt,xrt_noop).
 *
 *   gcc -I/usr/include/xrt noop_probe.c -o noop_probe \
 *       -Wl,--no-as-needed -lxrt_noop -lxrt_coreutil
 *   ./noop_probe [file.xclbin [leak]]
 *
 * With -lxrt_core instead of -lxrt_noop and no card, xrtDeviceOpen
 * returns NULL with errno ENOENT. With "leak", a P2P BO is left allocated
 * past xrtDeviceClose: the noop process then segfaults at exit.
 */
#include <stdio.h>
#include <string.h>
#include <xrt/xrt_bo.h>
#include <xrt/xrt_device.h>
#include <xrt/xrt_kernel.h>

int main(int argc, char **argv)
{
  setvbuf(stdout, NULL, _IONBF, 0);
  xrtDeviceHandle d = xrtDeviceOpen(0);
  printf("open(0) -> %s\n", d ? "ok" : "NULL");
  if (!d) {
    perror("xrtDeviceOpen");
    return 1;
  }
  xrtDeviceHandle d5 = xrtDeviceOpen(5);
  printf("open(5) -> %s\n", d5 ? "ok" : "NULL");

  if (argc > 1) {
    int r = xrtDeviceLoadXclbinFile(d, argv[1]);
    printf("load -> %d\n", r);
    xuid_t u;
    r = xrtDeviceGetXclbinUUID(d, u);
    printf("uuid -> %d ", r);
    for (int i = 0; i < 16; i++)
      printf("%02x", u[i]);
    printf("\n");
    xrtKernelHandle k = xrtPLKernelOpen(d, u, "sample_kernel");
    printf("kernel -> %s\n", k ? "ok" : "NULL");
    if (k) {
      printf("group(0)=%d group(3)=%d\n", xrtKernelArgGroupId(k, 0), xrtKernelArgGroupId(k, 3));
      xrtRunHandle run = xrtRunOpen(k);
      if (run) {
        printf("start (no args set) -> %d\n", xrtRunStart(run));
        printf("waitfor -> %d\n", (int)xrtRunWaitFor(run, 1000));
        xrtRunClose(run);
      }
      xrtKernelClose(k);
    }
  }

  xrtBufferHandle b = xrtBOAlloc(d, 8192, XRT_BO_FLAGS_NONE, 0);
  if (b) {
    void *m = xrtBOMap(b);
    printf("map -> %s addr=%llx\n", m ? "ok" : "NULL", (unsigned long long)xrtBOAddress(b));
    if (m)
      memset(m, 1, 8192);
    printf("sync -> %d\n", xrtBOSync(b, XCL_BO_SYNC_BO_TO_DEVICE, 8192, 0));
    printf("sync past end -> %d\n", xrtBOSync(b, XCL_BO_SYNC_BO_TO_DEVICE, 1 << 30, 0));
    printf("free -> %d\n", xrtBOFree(b));
  }
  xrtBufferHandle p = xrtBOAlloc(d, 8192, XRT_BO_FLAGS_P2P, 0);
  void *pm = p ? xrtBOMap(p) : NULL;
  printf("p2p map -> %s page-aligned=%d\n", pm ? "ok" : "NULL", pm ? ((unsigned long)pm % 4096 == 0) : 0);
  int leak = argc > 2 && strcmp(argv[2], "leak") == 0;
  if (p && !leak)
    xrtBOFree(p);
  if (d5)
    xrtDeviceClose(d5);
  printf("close -> %d\n", xrtDeviceClose(d));
  return 0;
}
