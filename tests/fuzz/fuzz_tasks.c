/* fuzz_tasks.c — libFuzzer target: the asyncio task reader (GC lists, type and base
 * resolution, task fields, await chains through coroutine frames and value stacks, gather
 * children, future callbacks) over a fake target memory built from the input. Seeds:
 * corpus/tasks/seed_311_task and seed_39_task are hand-built images (3.11, 3.9) of one
 * interpreter whose generation 0 holds one pending task suspended in a coroutine that awaits a
 * FutureIter over a future chained to a concurrent one (the reader lists it, with its chain,
 * as waiting on an executor); seed_311_heap is the heap walker's. Byte 0: the version
 * (3.8 + b % 6) and the mode; the rest is an image mapped at IMAGE_BASE, where _PyRuntime sits.
 * Mode "flat": reads outside the image fail (-EFAULT); mode "wrap": every nonzero address reads the
 * image modulo its size, so every pointer the walker follows is readable garbage. Bit 6 of byte 0:
 * the target "exits" (-ESRCH) after 4 x byte 1 reads, as a process dying mid-walk. Depends on
 * probes/python/cpython.h. */
#include "fuzz.h"
#include "python/asyncio_tasks.h"

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
    sop_pytasks *t = NULL;
    int rc = sop__tasks_read_fake(fake_read, &m, minor, IMAGE_BASE, &t, &missing);
    if (rc == 0) {
        if (!t || t->ntasks > SOP_TASKS_MAX || (!t->complete && !t->partial[0]))
            abort();
        for (size_t i = 0; i < t->ntasks; i++) {
            const sop_pytask *k = &t->tasks[i];
            if (!memchr(k->name, '\0', sizeof k->name) || !k->state ||
                k->nframes > SOP_TASK_MAX_DEPTH || k->nawaits > SOP_TASK_MAX_AWAITS)
                abort();
            for (size_t j = 0; j < k->nframes; j++)
                if (!k->frames[j].func || !k->frames[j].file)
                    abort();
        }
    } else if (t) {
        abort();
    }
    sop__tasks_free(t);
    sop__missing_free(&missing);
    free(img);
    return 0;
}
