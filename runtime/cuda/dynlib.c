/* runtime/cuda/dynlib.c — br_dynlib_open (runtime/cuda/dynlib.h). */
#define _POSIX_C_SOURCE 200809L
#include "runtime/cuda/dynlib.h"

#include <dlfcn.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

void *br_dynlib_open(const char *env, const char *const *names, size_t n,
                     char *path, size_t path_size, char *err, size_t err_size) {
    const char *value = getenv(env);
    bool chosen = value && value[0];
    const char *one[1] = {value};
    if (chosen) names = one, n = 1;
    const char *tried = "";
    for (size_t i = 0; i < n; i++) {
        void *lib = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
        tried = names[i];
        if (lib) {
            snprintf(path, path_size, "%s", names[i]);
            return lib;
        }
    }
    const char *why = dlerror();
    snprintf(err, err_size, "%s%s%s%sdlopen(\"%s\") failed: %s",
             chosen ? env : "", chosen ? "=" : "", chosen ? value : "",
             chosen ? ": " : "", tried, why ? why : "?");
    return NULL;
}
