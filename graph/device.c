/* graph/device.c — the spelling of a device name, owned here because
 * placement hints are graph data: the builder's braid_set_device, the text
 * format, the compile options' device list, the plan-file loader and the
 * command line all accept exactly what bg_device_parse accepts. */
#include "graph/graph.h"

#include <string.h>

bool bg_device_parse(const char *s, size_t len, int *cuda) {
    if (!s) return false;
    if (len == 3 && memcmp(s, "cpu", 3) == 0) {
        if (cuda) *cuda = BG_DEVICE_CPU;
        return true;
    }
    if (len < 6 || memcmp(s, "cuda:", 5) != 0) return false;
    const char *d = s + 5;
    size_t nd = len - 5;
    /* canonical decimal only: "cuda:01", "cuda:+1", "cuda: 1" are not
       names, so a hint survives a print/parse round trip and compares
       equal to the name the plan prints */
    if (nd > 2 || (nd == 2 && d[0] == '0')) return false;
    int v = 0;
    for (size_t i = 0; i < nd; i++) {
        if (d[i] < '0' || d[i] > '9') return false;
        v = v * 10 + (d[i] - '0');
    }
    if (v >= BG_MAX_CUDA_DEVICES) return false;
    if (cuda) *cuda = v;
    return true;
}
