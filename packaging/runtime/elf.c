/* The size of an ELF file: the furthest end of its section headers, sections and segments.
   Whatever follows (the squashfs) is not covered by any of them. */
#include <elf.h>
#include <fcntl.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include "runtime.h"

static int read_at(int fd, void *buf, size_t size, off_t offset)
{
    return pread(fd, buf, size, offset) == (ssize_t)size ? 0 : -1;
}

static off_t max_off(off_t a, off_t b) { return a > b ? a : b; }

off_t elf_end(const char *path)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    Elf64_Ehdr eh;
    off_t end = -1;
    if (read_at(fd, &eh, sizeof eh, 0) != 0 || memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0
        || eh.e_ident[EI_CLASS] != ELFCLASS64)
        goto out;  /* the runtime is only ever built as x86-64 / aarch64 (ELF64) */
    end = max_off(eh.e_shoff + (off_t)eh.e_shentsize * eh.e_shnum,
                  eh.e_phoff + (off_t)eh.e_phentsize * eh.e_phnum);
    for (int i = 0; i < eh.e_shnum; i++) {
        Elf64_Shdr sh;
        if (read_at(fd, &sh, sizeof sh, eh.e_shoff + (off_t)i * eh.e_shentsize) != 0) {
            end = -1;
            goto out;
        }
        if (sh.sh_type != SHT_NOBITS)
            end = max_off(end, sh.sh_offset + sh.sh_size);
    }
    for (int i = 0; i < eh.e_phnum; i++) {
        Elf64_Phdr ph;
        if (read_at(fd, &ph, sizeof ph, eh.e_phoff + (off_t)i * eh.e_phentsize) != 0) {
            end = -1;
            goto out;
        }
        end = max_off(end, ph.p_offset + ph.p_filesz);
    }
out:
    close(fd);
    return end;
}
