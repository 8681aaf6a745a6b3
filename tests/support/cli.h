/* tests/support/cli.h — running the braid command-line tool as a program
 * from the tests (test_cli.c, test_cli_info.c), in a temporary directory
 * per test. */
#ifndef BRAID_TESTS_CLI_H
#define BRAID_TESTS_CLI_H

/* What one run of the tool gave. */
typedef struct ts_cli_result {
    int status; /* exit status; 128 + signal when killed */
    char *out;  /* stdout, NUL-terminated */
    char *err;  /* stderr, NUL-terminated */
} ts_cli_result;

/* Runs the program at `program` with args (NULL-terminated, at most 38) and
 * environment env (NULL: ours), in no particular working directory,
 * capturing stdout and stderr through files in dir. Asserts that it
 * started. */
ts_cli_result ts_run_cli(const char *program, const char *dir, char *const *env,
                         const char *const *args);

void ts_cli_result_free(ts_cli_result *r);

/* A fresh temporary directory per test: ts_tmpdir_setup makes it (a
 * TestSuite's .init), ts_tmpdir_teardown removes it with all it holds
 * (.fini). */
extern char *ts_tmpdir;
void ts_tmpdir_setup(void);
void ts_tmpdir_teardown(void);

/* Expects exit status want; shows both streams otherwise. */
#define TS_EXPECT_STATUS(r, want)                                              \
    cr_assert_eq((r).status, (want),                                           \
                 "exit %d, want %d\nstdout:\n%s\nstderr:\n%s", (r).status,     \
                 (want), (r).out, (r).err)

#endif /* BRAID_TESTS_CLI_H */
