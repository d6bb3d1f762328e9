/* Laya's AppImage runtime: find the squashfs after our own ELF, mount it (or extract it) and run
 * its AppRun with the environment the official type-2 runtime sets: APPIMAGE, APPDIR, ARGV0, OWD.
 *
 * Options, all of which are consumed here and never reach the app:
 *   --appimage-extract [PATTERN]   extract (matching paths) into ./squashfs-root
 *   --appimage-extract-and-run     extract to a temporary folder, run, remove the folder
 *   --appimage-mount               mount, print the mount point, wait until interrupted
 *   --appimage-offset              print where the squashfs starts
 *   --appimage-help, --appimage-version
 * Without FUSE (no /dev/fuse, no fusermount3, a container) it falls back to extract-and-run.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "runtime.h"

#define RUNTIME_VERSION "laya-appimage-runtime 1"

struct ctx {
    char image[PATH_MAX];
    off_t offset;
    const char *argv0;
    char owd[PATH_MAX];
};

static void usage(const char *argv0)
{
    printf("AppImage options (%s):\n"
           "  --appimage-extract [PATTERN]  extract the contents into ./squashfs-root\n"
           "  --appimage-extract-and-run    run without FUSE: extract to a temporary folder first\n"
           "  --appimage-mount              mount, print the mount point and wait\n"
           "  --appimage-offset             print the offset of the filesystem image\n"
           "  --appimage-help               this text\n"
           "  --appimage-version            the runtime's version\n", argv0);
}

static void set_env(const struct ctx *c, const char *appdir)
{
    setenv("APPIMAGE", c->image, 1);
    setenv("APPDIR", appdir, 1);
    setenv("ARGV0", c->argv0, 1);
    setenv("OWD", c->owd, 1);
}

/* argv for AppRun: the app's own arguments, the runtime's options removed. */
static char **app_argv(const char *apprun, int argc, char **argv)
{
    char **out = calloc((size_t)argc + 1, sizeof *out);
    int n = 0;
    out[n++] = (char *)apprun;
    for (int i = 1; i < argc; i++)
        if (strncmp(argv[i], "--appimage-", 11) != 0)
            out[n++] = argv[i];
    out[n] = NULL;
    return out;
}

static int exec_apprun(const struct ctx *c, const char *appdir, int argc, char **argv)
{
    char apprun[PATH_MAX];
    snprintf(apprun, sizeof apprun, "%s/AppRun", appdir);
    set_env(c, appdir);
    execv(apprun, app_argv(apprun, argc, argv));
    fprintf(stderr, "appimage: cannot run %s: %s\n", apprun, strerror(errno));
    return 127;
}

static pid_t app_pid;

static void forward_signal(int sig)
{
    if (app_pid > 0)
        kill(app_pid, sig);
}

static int extract_and_run(const struct ctx *c, int argc, char **argv)
{
    const char *tmp = getenv("TMPDIR");
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s/appimage_extracted_XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(dir)) {
        perror("appimage: mkdtemp");
        return 1;
    }
    if (extract_image(c->image, c->offset, dir, NULL, 0) != 0) {
        remove_tree(dir);
        return 1;
    }
    pid_t pid = fork();
    if (pid < 0) {
        remove_tree(dir);
        return 1;
    }
    if (pid == 0)
        _exit(exec_apprun(c, dir, argc, argv));
    /* We stay to clean up after the app. Ctrl-C reaches the app from the terminal by itself; a
       SIGTERM or SIGHUP sent to us (a service manager, a test harness) is passed on to it. */
    app_pid = pid;
    signal(SIGINT, SIG_IGN);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = forward_signal;
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    if (!getenv("APPIMAGE_EXTRACT_AND_RUN_NO_CLEANUP"))
        remove_tree(dir);
    if (WIFSIGNALED(status))
        return 128 + WTERMSIG(status);
    return WEXITSTATUS(status);
}

static int mount_and_run(const struct ctx *c, int argc, char **argv, int wait_only)
{
    const char *tmp = getenv("TMPDIR");
    const char *base = strrchr(c->image, '/');
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s/.mount_%.6sXXXXXX", tmp && *tmp ? tmp : "/tmp", base ? base + 1 : "app");
    if (!mkdtemp(dir))
        return -1;
    int keepalive[2];
    if (pipe(keepalive) != 0 || mount_image(c->image, c->offset, dir, keepalive[0], keepalive[1]) != 0) {
        rmdir(dir);
        return -1;
    }
    if (wait_only) {
        printf("%s\n", dir);
        fflush(stdout);
        pause();  /* until a signal ends us; the keepalive then closes and the mount goes */
        return 0;
    }
    return exec_apprun(c, dir, argc, argv);
}

int main(int argc, char **argv)
{
    struct ctx c;
    c.argv0 = argv[0];
    if (!realpath("/proc/self/exe", c.image)) {
        perror("appimage: /proc/self/exe");
        return 1;
    }
    if (!getcwd(c.owd, sizeof c.owd))
        c.owd[0] = '\0';
    c.offset = elf_end(c.image);
    if (c.offset <= 0) {
        fprintf(stderr, "appimage: cannot read the ELF headers of %s\n", c.image);
        return 1;
    }
    const char *opt = argc > 1 ? argv[1] : "";
    if (strcmp(opt, "--appimage-offset") == 0) {
        printf("%lld\n", (long long)c.offset);
        return 0;
    }
    if (strcmp(opt, "--appimage-help") == 0) {
        usage(argv[0]);
        return 0;
    }
    if (strcmp(opt, "--appimage-version") == 0) {
        printf("%s\n", RUNTIME_VERSION);
        return 0;
    }
    if (strcmp(opt, "--appimage-extract") == 0) {
        const char *pattern = argc > 2 ? argv[2] : NULL;
        return extract_image(c.image, c.offset, "squashfs-root", pattern, 1) == 0 ? 0 : 1;
    }
    if (strcmp(opt, "--appimage-extract-and-run") == 0 || getenv("APPIMAGE_EXTRACT_AND_RUN"))
        return extract_and_run(&c, argc, argv);
    if (strcmp(opt, "--appimage-mount") == 0) {
        if (mount_and_run(&c, argc, argv, 1) == 0)
            return 0;
        fprintf(stderr, "appimage: cannot mount with FUSE\n");
        return 1;
    }
    if (strncmp(opt, "--appimage-", 11) == 0) {
        fprintf(stderr, "appimage: unknown option %s\n", opt);
        usage(argv[0]);
        return 1;
    }
    int rc = mount_and_run(&c, argc, argv, 0);  /* returns only when the mount failed */
    if (rc == 127)
        return rc;
    fprintf(stderr, "appimage: FUSE is not available here; extracting to a temporary folder instead "
                    "(install fuse3 to start faster)\n");
    return extract_and_run(&c, argc, argv);
}
