/* Serve the appended squashfs over FUSE from a forked child (squashfuse's low-level operations).
 *
 * The child lives until the keepalive pipe reports EOF: the parent keeps the write end open across
 * exec, so the mount lasts as long as the app (and any child that inherited that descriptor).
 */
#define _GNU_SOURCE
#include <squashfuse/ll.h>

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "runtime.h"

static void fill_ops(struct fuse_lowlevel_ops *ops)
{
    memset(ops, 0, sizeof *ops);
    ops->getattr = sqfs_ll_op_getattr;
    ops->opendir = sqfs_ll_op_opendir;
    ops->releasedir = sqfs_ll_op_releasedir;
    ops->readdir = sqfs_ll_op_readdir;
    ops->lookup = sqfs_ll_op_lookup;
    ops->open = sqfs_ll_op_open;
    ops->create = sqfs_ll_op_create;
    ops->release = sqfs_ll_op_release;
    ops->read = sqfs_ll_op_read;
    ops->readlink = sqfs_ll_op_readlink;
    ops->listxattr = sqfs_ll_op_listxattr;
    ops->getxattr = sqfs_ll_op_getxattr;
    ops->forget = sqfs_ll_op_forget;
    ops->statfs = stfs_ll_op_statfs;
}

static void serve(struct fuse_session *se, int keepalive_fd)
{
    struct fuse_buf buf;
    memset(&buf, 0, sizeof buf);
    struct pollfd fds[2] = {{fuse_session_fd(se), POLLIN, 0}, {keepalive_fd, POLLIN, 0}};
    while (!fuse_session_exited(se)) {
        if (poll(fds, 2, -1) < 0) {
            if (errno == EINTR)
                continue;
            break;
        }
        if (fds[1].revents)  /* EOF: the app and every heir of the pipe are gone */
            break;
        if (fds[0].revents & (POLLERR | POLLHUP | POLLNVAL))
            break;  /* unmounted from outside (fusermount3 -u) */
        if (fds[0].revents & POLLIN) {
            int n = fuse_session_receive_buf(se, &buf);
            if (n == -EINTR || n == -EAGAIN)
                continue;
            if (n <= 0)
                break;
            fuse_session_process_buf(se, &buf);
        }
    }
    free(buf.mem);
}

static int run_server(const char *image, off_t offset, const char *mountpoint, int keepalive_fd,
                      int ready_fd)
{
    sqfs_ll *ll = sqfs_ll_open(image, (size_t)offset);
    if (!ll)
        return 1;
    char fsname[4200];
    snprintf(fsname, sizeof fsname, "ro,nodev,nosuid,fsname=%s,subtype=appimage", image);
    char *argv[] = {"appimage", "-o", fsname, NULL};
    struct fuse_args args = FUSE_ARGS_INIT(3, argv);
    struct fuse_lowlevel_ops ops;
    fill_ops(&ops);
    sqfs_ll_chan ch;
    if (sqfs_ll_mount(&ch, mountpoint, &args, &ops, sizeof ops, ll) != SQFS_OK)
        return 1;
    char ok = 'y';
    if (write(ready_fd, &ok, 1) != 1)
        ok = 'n';
    close(ready_fd);
    if (ok == 'y')
        serve(ch.session, keepalive_fd);
    sqfs_ll_unmount(&ch, mountpoint);
    sqfs_ll_destroy(ll);
    free(ll);
    rmdir(mountpoint);
    return 0;
}

int mount_image(const char *image, off_t offset, const char *mountpoint, int keepalive_read_fd,
                int keepalive_write_fd)
{
    int ready[2];
    if (pipe2(ready, O_CLOEXEC) != 0)
        return -1;
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        close(ready[0]);
        close(keepalive_write_fd);
        /* Out of the terminal's process group: Ctrl-C goes to the app, which may still need its
           files while it shuts down; the mount ends when the app is gone. */
        setsid();
        int null = open("/dev/null", O_RDWR);
        if (null >= 0) {
            dup2(null, 0);
            dup2(null, 1);
        }
        _exit(run_server(image, offset, mountpoint, keepalive_read_fd, ready[1]));
    }
    close(ready[1]);
    close(keepalive_read_fd);
    char ok = 'n';
    ssize_t n;
    do
        n = read(ready[0], &ok, 1);
    while (n < 0 && errno == EINTR);
    close(ready[0]);
    if (n == 1 && ok == 'y')
        return 0;
    waitpid(pid, NULL, 0);
    return -1;
}
