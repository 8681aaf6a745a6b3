/* tests/test_outfile.c — how braid writes its outputs (graph/outfile.h),
 * through the public writers: plan files, graph text and .npy files keep a
 * replaced file's mode and follow the umask for new ones; a symbolic link
 * is written through, a link to nothing refused; a FIFO or character
 * device is written in place, never replaced; a directory or socket is
 * refused with a message that says so; and temporaries left by a killed
 * save are removed by the next save to that path. */
#define _POSIX_C_SOURCE 200809L
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "braid/braid.h"
#include "runtime/npy/npy.h"
#include "tests/support/golden.h"
#include "tests/support/support.h"
#include "tests/tmpfiles.h"

static char *dir;

static void setup(void) {
    dir = tf_mkdtemp();
    cr_assert_not_null(dir);
}

static void teardown(void) {
    tf_rmtree(dir);
    free(dir);
}

TestSuite(outfile, .init = setup, .fini = teardown, .timeout = 30);

static mode_t mode_of(const char *path) {
    struct stat st;
    cr_assert_eq(lstat(path, &st), 0, "%s: %s", path, strerror(errno));
    return st.st_mode;
}

/* The graph text written to path, or the test fails. */
static void write_graph_ok(const char *path) {
    braid_graph *g = ts_tiny_graph();
    braid_status s = braid_graph_write_file(g, path);
    cr_assert_eq(s, BRAID_OK, "%s", braid_last_error());
    braid_graph_free(g);
}

/* Writing to path fails with BRAID_ERR_IO and a message holding why. */
static void write_graph_refused(const char *path, const char *why) {
    braid_graph *g = ts_tiny_graph();
    braid_status s = braid_graph_write_file(g, path);
    cr_assert_eq(s, BRAID_ERR_IO, "status %d: %s", s, braid_last_error());
    cr_assert(strstr(braid_last_error(), why) &&
                  strstr(braid_last_error(), path),
              "message: %s (expected \"%s\")", braid_last_error(), why);
    braid_graph_free(g);
}

static bool is_graph_text(const char *data) {
    return data && strstr(data, "input f32[8]") && strstr(data, "output \"y\"");
}

Test(outfile, plan_file_keeps_a_private_mode) {
    char *path = tf_path(dir, "w.plan");
    cr_assert(tf_write_str(path, "old"));
    cr_assert_eq(chmod(path, 0600), 0);
    braid_graph *g = ts_tiny_graph();
    braid_plan *p = NULL;
    cr_assert_eq(braid_compile(g, NULL, &p), BRAID_OK, "%s",
                 braid_last_error());
    cr_assert_eq(braid_plan_save(p, path), BRAID_OK, "%s", braid_last_error());
    cr_assert_eq(mode_of(path) & 07777, 0600,
                 "mode %o: a plan embeds "
                 "weights and must stay private",
                 mode_of(path) & 07777);
    braid_plan *back = NULL;
    cr_assert_eq(braid_plan_load(path, NULL, &back), BRAID_OK, "%s",
                 braid_last_error());
    braid_plan_free(back);
    braid_plan_free(p);
    braid_graph_free(g);
    free(path);
}

Test(outfile, new_files_follow_the_umask) {
    mode_t old = umask(027);
    char *path = tf_path(dir, "new.graph");
    write_graph_ok(path);
    cr_assert_eq(mode_of(path) & 07777, 0640, "mode %o", mode_of(path) & 07777);
    /* the .npy writer too */
    char *npy = tf_path(dir, "new.npy");
    float v[2] = {1, 2};
    int64_t dims[1] = {2};
    cr_assert_eq(br_npy_write(npy, BRAID_F32, 1, dims, v), BRAID_OK, "%s",
                 braid_last_error());
    cr_assert_eq(mode_of(npy) & 07777, 0640, "mode %o", mode_of(npy) & 07777);
    /* and plan files, which used to be made 0644 whatever the umask */
    char *plan = tf_path(dir, "new.plan");
    braid_graph *g = ts_tiny_graph();
    braid_plan *p = NULL;
    cr_assert_eq(braid_compile(g, NULL, &p), BRAID_OK, "%s",
                 braid_last_error());
    cr_assert_eq(braid_plan_save(p, plan), BRAID_OK, "%s", braid_last_error());
    cr_assert_eq(mode_of(plan) & 07777, 0640, "mode %o", mode_of(plan) & 07777);
    braid_plan_free(p);
    braid_graph_free(g);
    free(plan);
    umask(old);
    free(npy);
    free(path);
}

Test(outfile, symbolic_link_written_through) {
    char *target = tf_path(dir, "real.graph");
    char *link = tf_path(dir, "link.graph");
    cr_assert(tf_write_str(target, "old"));
    cr_assert_eq(chmod(target, 0640), 0);
    cr_assert_eq(symlink("real.graph", link), 0);
    write_graph_ok(link);
    cr_assert(S_ISLNK(mode_of(link)), "the link was replaced");
    cr_assert_eq(mode_of(target) & 07777, 0640);
    char *data = ts_read_file(target);
    cr_assert(is_graph_text(data), "the target holds: %s", data);
    cr_assert_eq(tf_count_entries(dir), 2, "a temporary file was left");
    free(data);
    free(link);
    free(target);
}

Test(outfile, link_to_nothing_refused) {
    char *link = tf_path(dir, "dangling.graph");
    cr_assert_eq(symlink("missing/nowhere.graph", link), 0);
    write_graph_refused(link, "symbolic link to nothing");
    cr_assert(S_ISLNK(mode_of(link)));
    cr_assert_eq(tf_count_entries(dir), 1);
    free(link);
}

Test(outfile, fifo_written_in_place) {
    char *path = tf_path(dir, "pipe");
    cr_assert_eq(mkfifo(path, 0600), 0);
    /* A reader first, so the writer's open does not wait; the text is far
     * below the pipe's buffer, so the write does not wait either. */
    int rd = open(path, O_RDONLY | O_NONBLOCK);
    cr_assert_geq(rd, 0);
    write_graph_ok(path);
    cr_assert(S_ISFIFO(mode_of(path)), "the FIFO was replaced");
    char buf[4096];
    ssize_t n = read(rd, buf, sizeof buf - 1);
    cr_assert_gt(n, 0, "nothing came through the FIFO");
    buf[n] = '\0';
    cr_assert(is_graph_text(buf), "%s", buf);
    close(rd);
    cr_assert_eq(tf_count_entries(dir), 1, "a temporary file was left");
    free(path);
}

Test(outfile, character_device_written_in_place) {
    /* /dev/null through a link of ours: were the device replaced, the link
     * would be the thing renamed over, never /dev/null itself. */
    char *link = tf_path(dir, "null");
    cr_assert_eq(symlink("/dev/null", link), 0);
    write_graph_ok(link);
    cr_assert(S_ISLNK(mode_of(link)), "the link was replaced by a file");
    cr_assert(S_ISCHR(mode_of("/dev/null")));
    cr_assert_eq(tf_count_entries(dir), 1, "a temporary file was left");
    free(link);
}

Test(outfile, directory_and_socket_refused) {
    char *sub = tf_path(dir, "sub");
    cr_assert_eq(mkdir(sub, 0755), 0);
    write_graph_refused(sub, "is a directory");
    char slash[600];
    snprintf(slash, sizeof slash, "%s/", sub);
    write_graph_refused(slash, "is a directory");
    cr_assert_eq(tf_count_entries(sub), 0, "something was left in %s", sub);
    char *sock = tf_path(dir, "sock");
    int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    cr_assert_lt(strlen(sock), sizeof a.sun_path);
    strcpy(a.sun_path, sock);
    cr_assert_eq(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
    write_graph_refused(sock, "will not replace");
    cr_assert(S_ISSOCK(mode_of(sock)));
    close(fd);
    cr_assert_eq(tf_count_entries(dir), 2);
    free(sock);
    free(sub);
}

/* A process id that no longer runs: a child that exited. */
static pid_t dead_pid(void) {
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) _exit(0);
    cr_assert_eq(waitpid(pid, NULL, 0), pid);
    return pid;
}

Test(outfile, stale_temporaries_of_killed_saves_removed) {
    char *path = tf_path(dir, "out.plan");
    char name[600];
    /* what a save killed part-way leaves: a temporary of a gone process */
    snprintf(name, sizeof name, "%s.braid-tmp.%ld.7", path, (long)dead_pid());
    cr_assert(tf_write_str(name, "half a plan"));
    /* a save still going on in a live process (our parent) stays */
    char live[600];
    snprintf(live, sizeof live, "%s.braid-tmp.%ld.3", path, (long)getppid());
    cr_assert(tf_write_str(live, "a save in progress"));
    /* a file of the user's that merely looks similar stays */
    char other[600];
    snprintf(other, sizeof other, "%s.braid-tmp.notes", path);
    cr_assert(tf_write_str(other, "mine"));
    write_graph_ok(path);
    cr_assert_neq(access(name, F_OK), 0,
                  "the stale temporary %s is still "
                  "there",
                  name);
    cr_assert_eq(access(live, F_OK), 0, "a live save's temporary was removed");
    cr_assert_eq(access(other, F_OK), 0);
    cr_assert_eq(tf_count_entries(dir), 3);
    free(path);
}

/* A save killed while it writes leaves its temporary, named so that the
 * next save to the same path recognises and removes it. */
Test(outfile, killed_save_cleaned_by_the_next) {
    char *path = tf_path(dir, "big.npy");
    size_t n = (size_t)64 << 20;
    float *v = calloc(n / sizeof *v, sizeof *v);
    cr_assert_not_null(v);
    int64_t dims[1] = {(int64_t)(n / sizeof *v)};
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        br_npy_write(path, BRAID_F32, 1, dims, v);
        _exit(0);
    }
    /* Kill it once its temporary exists (or after it finished). */
    for (int i = 0; i < 2000 && tf_count_entries(dir) == 0; i++)
        nanosleep(&(struct timespec){0, 1000000}, NULL);
    kill(pid, SIGKILL);
    cr_assert_eq(waitpid(pid, NULL, 0), pid);
    int64_t one[1] = {1};
    cr_assert_eq(br_npy_write(path, BRAID_F32, 1, one, v), BRAID_OK, "%s",
                 braid_last_error());
    cr_assert_eq(tf_count_entries(dir), 1,
                 "the killed save's temporary is "
                 "still there");
    free(v);
    free(path);
}
