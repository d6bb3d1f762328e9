/* --appimage-extract and the extract-and-run fallback: copy the squashfs tree out to a folder. */
#define _GNU_SOURCE
#include <squashfuse/squashfuse.h>

#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "runtime.h"

#define COPY_BLOCK (1 << 20)

static int mkdirs(const char *path, mode_t mode)
{
    char buf[4096];
    if (snprintf(buf, sizeof buf, "%s", path) >= (int)sizeof buf)
        return -1;
    for (char *p = buf + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        if (mkdir(buf, 0755) != 0 && errno != EEXIST)
            return -1;
        *p = '/';
    }
    return mkdir(buf, mode) == 0 || errno == EEXIST ? 0 : -1;
}

static int write_file(sqfs *fs, sqfs_inode *inode, const char *dest, char *block)
{
    /* Owner write so the tree can be cleaned up again; the rest as stored. */
    mode_t mode = (inode->base.mode & 07777) | S_IWUSR;
    int out = open(dest, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
    if (out < 0)
        return -1;
    uint64_t size = inode->xtra.reg.file_size;
    for (uint64_t pos = 0; pos < size;) {
        sqfs_off_t n = size - pos < COPY_BLOCK ? (sqfs_off_t)(size - pos) : COPY_BLOCK;
        if (sqfs_read_range(fs, inode, (sqfs_off_t)pos, &n, block) != SQFS_OK || n <= 0)
            goto fail;
        for (sqfs_off_t done = 0; done < n;) {
            ssize_t w = write(out, block + done, (size_t)(n - done));
            if (w < 0 && errno == EINTR)
                continue;
            if (w <= 0)
                goto fail;
            done += w;
        }
        pos += (uint64_t)n;
    }
    if (fchmod(out, mode) != 0)  /* open() applied the umask */
        goto fail;
    return close(out);
fail:
    close(out);
    return -1;
}

static int write_symlink(sqfs *fs, sqfs_inode *inode, const char *dest)
{
    char target[4096];
    size_t size = sizeof target;
    if (inode->xtra.symlink_size >= sizeof target || sqfs_readlink(fs, inode, target, &size) != SQFS_OK)
        return -1;
    unlink(dest);
    return symlink(target, dest);
}

static int extract_entry(sqfs *fs, const char *path, sqfs_inode_id id, const char *dest, char *block)
{
    sqfs_inode inode;
    if (sqfs_inode_get(fs, &inode, id) != SQFS_OK)
        return -1;
    switch (inode.base.inode_type) {
    case SQUASHFS_DIR_TYPE:
    case SQUASHFS_LDIR_TYPE:
        return mkdirs(dest, (inode.base.mode & 07777) | S_IRWXU);
    case SQUASHFS_REG_TYPE:
    case SQUASHFS_LREG_TYPE:
        return write_file(fs, &inode, dest, block);
    case SQUASHFS_SYMLINK_TYPE:
    case SQUASHFS_LSYMLINK_TYPE:
        return write_symlink(fs, &inode, dest);
    default:
        fprintf(stderr, "appimage: skipping special file %s\n", path);
        return 0;
    }
}

int extract_image(const char *image, off_t offset, const char *dest, const char *pattern, int verbose)
{
    int fd = open(image, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        perror(image);
        return -1;
    }
    sqfs fs;
    if (sqfs_init(&fs, fd, (size_t)offset) != SQFS_OK) {
        fprintf(stderr, "appimage: no squashfs image at offset %lld of %s\n", (long long)offset, image);
        close(fd);
        return -1;
    }
    char *block = malloc(COPY_BLOCK);
    int rc = block && mkdirs(dest, 0755) == 0 ? 0 : -1;
    sqfs_traverse trv;
    if (rc == 0 && sqfs_traverse_open(&trv, &fs, sqfs_inode_root(&fs)) != SQFS_OK)
        rc = -1;
    if (rc == 0) {
        sqfs_err err = SQFS_OK;
        while (rc == 0 && sqfs_traverse_next(&trv, &err)) {
            if (trv.dir_end)
                continue;
            if (pattern && fnmatch(pattern, trv.path, 0) != 0)
                continue;
            char out[4096];
            if (snprintf(out, sizeof out, "%s/%s", dest, trv.path) >= (int)sizeof out) {
                rc = -1;
                break;
            }
            if (pattern) {  /* a match deep in the tree still needs its parent folders */
                char *slash = strrchr(out, '/');
                *slash = '\0';
                rc = mkdirs(out, 0755);
                *slash = '/';
            }
            if (verbose)
                printf("%s\n", out);
            if (rc == 0 && extract_entry(&fs, trv.path, trv.entry.inode, out, block) != 0) {
                fprintf(stderr, "appimage: cannot extract %s: %s\n", trv.path, strerror(errno));
                rc = -1;
            }
        }
        if (err != SQFS_OK)
            rc = -1;
        sqfs_traverse_close(&trv);
    }
    free(block);
    sqfs_destroy(&fs);
    close(fd);
    return rc;
}

static int remove_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st; (void)ftw;
    return flag == FTW_DP ? rmdir(path) : unlink(path);
}

int remove_tree(const char *path)
{
    return nftw(path, remove_one, 32, FTW_DEPTH | FTW_PHYS);
}
