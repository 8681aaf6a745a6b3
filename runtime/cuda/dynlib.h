/* runtime/cuda/dynlib.h — opening a library braid loads at run time (NCCL,
 * cuDNN), one rule for all (prefix br_dynlib_). */
#ifndef BRAID_RUNTIME_DYNLIB_H
#define BRAID_RUNTIME_DYNLIB_H

#include <stddef.h>

/* dlopen (RTLD_NOW | RTLD_LOCAL) of the file named by the environment
 * variable env when it is set and not empty — that one and nothing else,
 * so a wrong name is an error rather than quietly replaced by whatever
 * the system has — else of names[0 .. n) in order. Returns the handle with
 * the name loaded in path, or NULL with "[ENV=value: ]dlopen("name")
 * failed: why" in err. */
void *br_dynlib_open(const char *env, const char *const *names, size_t n,
                     char *path, size_t path_size, char *err, size_t err_size);

#endif
