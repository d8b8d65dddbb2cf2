/* fuzz_pywalk.c — libFuzzer target: the CPython walker (interpreters, thread states, frames,
 * code objects, line tables, thread names, GIL and GC state) over a fake target memory built
 * from the input. Byte 0: the version (3.8 + b % 6) and the mode; the rest is an image mapped
 * at IMAGE_BASE, where _PyRuntime sits. Mode "flat": reads outside the image fail (-EFAULT);
 * mode "wrap": every nonzero address reads the image modulo its size, so every pointer the
 * walker follows is readable garbage. Bit 6 of byte 0: the target "exits" (-ESRCH) after
 * 4 x byte 1 reads, as a process dying mid-walk. Depends on probes/python/cpython.h. */
#include "fuzz.h"
#include "python/cpython.h"

#include <errno.h>

#define IMAGE_BASE 0x100000ull

typedef struct {
    const uint8_t *img;
    size_t size;
    int wrap;
    long reads_left; /* < 0: never exits */
} fake_mem;

static int fake_read(void *ctx, uint64_t addr, void *buf, size_t len)
{
    fake_mem *m = ctx;
    uint8_t *out = buf;
    if (m->reads_left >= 0 && m->reads_left-- == 0) {
        m->reads_left = 0;
        return -ESRCH;
    }
    if (m->size == 0)
        return -EFAULT;
    if (!m->wrap) {
        if (addr < IMAGE_BASE || addr - IMAGE_BASE > m->size || len > m->size - (addr - IMAGE_BASE))
            return -EFAULT;
        memcpy(out, m->img + (addr - IMAGE_BASE), len);
        return 0;
    }
    size_t off = (size_t)((addr - IMAGE_BASE) % m->size);
    for (size_t done = 0; done < len;) {
        size_t n = m->size - off < len - done ? m->size - off : len - done;
        memcpy(out + done, m->img + off, n);
        done += n;
        off = 0;
    }
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    int minor = 8 + data[0] % 6;
    fake_mem m = {NULL, size - 1, (data[0] & 0x80) != 0, -1};
    if ((data[0] & 0x40) && size > 1)
        m.reads_left = 4L * data[1];
    uint8_t *img = malloc(m.size ? m.size : 1);
    if (!img)
        abort();
    memcpy(img, data + 1, m.size);
    m.img = img;
    sop_missing missing = {0};
    sop_python *py = NULL;
    int rc = sop__python_collect_fake(fake_read, &m, minor, IMAGE_BASE, 0, &py, &missing);
    if (rc == 0) {
        if (!py)
            abort();
        for (size_t i = 0; i < py->nthreads; i++) {
            const sop_pythread *t = &py->threads[i];
            if (!memchr(t->name, '\0', sizeof t->name))
                abort();
            for (size_t f = 0; f < t->nframes; f++)
                if (strlen(t->frames[f].func) > 1u << 20 || strlen(t->frames[f].file) > 1u << 20)
                    abort();
        }
    } else if (py) {
        abort();
    }
    sop__python_free(py);
    sop__missing_free(&missing);
    free(img);
    return 0;
}
