/* Tells a plugin from another library named like one, without loading it.
 *
 * Other libraries of the project share the plugins' naming pattern
 * (libportable-dist.so sits next to libportable.so), and the scan must not
 * open files (that is admission's job, and only for the backend asked for).
 * So the scan reads the file's ELF dynamic symbol table: a well-formed
 * shared object that does not define the entry symbol is not a backend. A
 * file this reader cannot judge (not ELF, another class or byte order,
 * truncated) stays a candidate, and admission then records why it fails. */
#include <elf.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "runtime/runtime.h"

#if UINTPTR_MAX > 0xffffffffu
typedef Elf64_Ehdr ehdr_t;
typedef Elf64_Shdr shdr_t;
typedef Elf64_Sym sym_t;
#define PT__ELF_CLASS ELFCLASS64
#else
typedef Elf32_Ehdr ehdr_t;
typedef Elf32_Shdr shdr_t;
typedef Elf32_Sym sym_t;
#define PT__ELF_CLASS ELFCLASS32
#endif

/* Whether [off, off+len) lies inside a file of size bytes. */
static bool inside(uint64_t off, uint64_t len, uint64_t size) { return off <= size && len <= size - off; }

/* 1: defines sym; 0: a shared object that does not; -1: cannot tell. */
static int defines_symbol(const unsigned char *f, uint64_t size, const char *sym) {
    if (size < sizeof(ehdr_t) || memcmp(f, ELFMAG, SELFMAG) != 0) return -1;
    ehdr_t eh;
    memcpy(&eh, f, sizeof eh);
    const int native = (__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__) ? ELFDATA2LSB : ELFDATA2MSB;
    if (eh.e_ident[EI_CLASS] != PT__ELF_CLASS || eh.e_ident[EI_DATA] != native ||
        eh.e_type != ET_DYN || eh.e_shentsize != sizeof(shdr_t) ||
        !inside(eh.e_shoff, (uint64_t)eh.e_shnum * sizeof(shdr_t), size))
        return -1;
    size_t want = strlen(sym);
    bool have_dynsym = false;
    for (unsigned i = 0; i < eh.e_shnum; ++i) {
        shdr_t sh, str;
        memcpy(&sh, f + eh.e_shoff + (uint64_t)i * sizeof sh, sizeof sh);
        if (sh.sh_type != SHT_DYNSYM) continue;
        if (sh.sh_entsize != sizeof(sym_t) || sh.sh_link >= eh.e_shnum ||
            !inside(sh.sh_offset, sh.sh_size, size))
            return -1;
        memcpy(&str, f + eh.e_shoff + (uint64_t)sh.sh_link * sizeof str, sizeof str);
        if (!inside(str.sh_offset, str.sh_size, size)) return -1;
        have_dynsym = true;
        for (uint64_t s = 0; s < sh.sh_size / sizeof(sym_t); ++s) {
            sym_t y;
            memcpy(&y, f + sh.sh_offset + s * sizeof y, sizeof y);
            if (y.st_shndx == SHN_UNDEF || y.st_name >= str.sh_size ||
                str.sh_size - y.st_name <= want)
                continue;
            const char *name = (const char *)f + str.sh_offset + y.st_name;
            if (memcmp(name, sym, want) == 0 && name[want] == '\0') return 1;
        }
    }
    return have_dynsym ? 0 : -1;
}

bool pt__file_is_other_library(const char *path, const char *entry_symbol) {
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) return false;
    struct stat st;
    int verdict = -1;
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0) {
        void *map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (map != MAP_FAILED) {
            verdict = defines_symbol(map, (uint64_t)st.st_size, entry_symbol);
            munmap(map, (size_t)st.st_size);
        }
    }
    close(fd);
    return verdict == 0;
}
