/* The Laya AppImage runtime (type 2): an ELF whose end is followed by a squashfs of the AppDir. */
#ifndef LAYA_RUNTIME_H
#define LAYA_RUNTIME_H

#include <stddef.h>
#include <sys/types.h>

/* Where the ELF file ends, i.e. where the appended squashfs starts; -1 on error. */
off_t elf_end(const char *path);

/* Extract the squashfs at `offset` of `image` into `dest` (created if missing). When `pattern` is
   not NULL only paths matching it (fnmatch) are extracted. `verbose` prints each path.
   Returns 0 on success. */
int extract_image(const char *image, off_t offset, const char *dest, const char *pattern,
                  int verbose);

/* Mount the squashfs at `offset` of `image` on `mountpoint` with FUSE in a forked child that
   serves it until every holder of `keepalive_fd` (the write end of a pipe that the caller keeps
   open across exec) is gone. Returns 0 once the mount is live, -1 when FUSE is not usable here. */
int mount_image(const char *image, off_t offset, const char *mountpoint, int keepalive_read_fd,
                int keepalive_write_fd);

/* rm -rf, used to clean up after extract-and-run. */
int remove_tree(const char *path);

#endif
