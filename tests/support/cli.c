/* tests/support/cli.c — running the braid command-line tool from the
 * tests. */
#define _POSIX_C_SOURCE 200809L

#include "tests/support/cli.h"

#include <criterion/criterion.h>

#include <fcntl.h>
#include <spawn.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/support/golden.h"
#include "tests/tmpfiles.h"

extern char **environ;

char *ts_tmpdir;

void ts_tmpdir_setup(void) {
    ts_tmpdir = tf_mkdtemp();
    cr_assert(ts_tmpdir);
}

void ts_tmpdir_teardown(void) {
    tf_rmtree(ts_tmpdir);
    free(ts_tmpdir);
    ts_tmpdir = NULL;
}

ts_cli_result ts_run_cli(const char *program, const char *dir, char *const *env,
                         const char *const *args) {
    const char *argv[40] = {program};
    int argc = 1;
    while (args[argc - 1] && argc < 39) {
        argv[argc] = args[argc - 1];
        argc++;
    }
    argv[argc] = NULL;
    char *out = tf_path(dir, "stdout.txt"), *err = tf_path(dir, "stderr.txt");
    cr_assert(out && err);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, out, O_WRONLY | O_CREAT | O_TRUNC,
                                     0644);
    posix_spawn_file_actions_addopen(&fa, 2, err, O_WRONLY | O_CREAT | O_TRUNC,
                                     0644);
    pid_t pid;
    int rc = posix_spawn(&pid, program, &fa, NULL, (char **)argv,
                         env ? env : environ);
    posix_spawn_file_actions_destroy(&fa);
    cr_assert_eq(rc, 0, "cannot start %s", program);
    int ws = 0;
    cr_assert_eq(waitpid(pid, &ws, 0), pid);
    ts_cli_result r;
    r.status = WIFEXITED(ws) ? WEXITSTATUS(ws) : 128 + WTERMSIG(ws);
    r.out = ts_read_file(out);
    r.err = ts_read_file(err);
    cr_assert(r.out && r.err);
    unlink(out);
    unlink(err);
    free(out);
    free(err);
    return r;
}

void ts_cli_result_free(ts_cli_result *r) {
    free(r->out);
    free(r->err);
}
