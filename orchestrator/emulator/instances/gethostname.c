/* smtrain's stand-in for the DLC's hostname shim (LD_PRELOAD): gethostname() answers the emulated host's name,
 * algo-N, taken from SMTRAIN_HOSTNAME, so every process of an emulated host sees the name it has on SageMaker.
 * Without the variable it answers as the C library does. Built once per machine by hostname.py. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int gethostname(char *name, size_t len)
{
    const char *host = getenv("SMTRAIN_HOSTNAME");
    if (host == NULL || host[0] == '\0') {
        int (*real_gethostname)(char *, size_t) = (int (*)(char *, size_t))dlsym(RTLD_NEXT, "gethostname");
        if (real_gethostname == NULL) {
            errno = ENOSYS;
            return -1;
        }
        return real_gethostname(name, len);
    }
    size_t needed = strlen(host) + 1;
    if (needed > len) {
        errno = ENAMETOOLONG;
        return -1;
    }
    memcpy(name, host, needed);
    return 0;
}
