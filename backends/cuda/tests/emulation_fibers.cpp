/* libportable CUDA backend — the fibers behind kernel_emulation.h: the
 * threads of one emulated block, run cooperatively on one OS thread.
 *
 * A block's threads start one after another; each runs until it reaches a
 * barrier (__syncthreads, or the two inside a shuffle) or finishes, then
 * the next one runs. One pass over every unfinished thread therefore takes
 * the whole block from one barrier to the next, as the hardware would.
 *
 * Switching is the emulation's whole cost (a launch of 2 blocks of 256
 * threads switches at least a thousand times), so on x86-64 it is a few
 * instructions that save the callee-saved registers and swap stacks; glibc's
 * swapcontext also saves the signal mask, a system call per switch, which
 * made the simulated suites several times slower. Other architectures use
 * ucontext. */
#include <cstdlib>
#include <memory>
#include <vector>

#include "kernel_emulation.h"

#if !defined(__x86_64__)
#include <ucontext.h>
#endif

/* Under AddressSanitizer every stack switch is announced, or ASan would
 * take a fiber's frames for overflows of the thread's stack. */
#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/common_interface_defs.h>
#define PTCU_ASAN_FIBERS 1
#endif

namespace ptcu_emu {

namespace {
constexpr size_t kFiberStack = 64 * 1024;
}

struct Block {
    const std::function<void()> *body = nullptr;
    dim3 block;
    unsigned current = 0;
    std::vector<unsigned char> finished;
#if defined(__x86_64__)
    void *scheduler_sp = nullptr;
    std::vector<void *> fiber_sp;
#else
    ucontext_t scheduler;
    std::vector<ucontext_t> fibers;
#endif
    unsigned long long slots[1024];
#ifdef PTCU_ASAN_FIBERS
    std::vector<char *> stack_base;
    std::vector<void *> fake_stack; /* per fiber, while it is switched out */
    void *scheduler_fake = nullptr;
    const void *scheduler_bottom = nullptr;
    size_t scheduler_size = 0;
#endif
};

namespace {

thread_local Block *tl_block;

/* Stacks are kept per OS thread and reused by every later block. */
std::vector<std::unique_ptr<char[]>> &fiber_stacks(unsigned n) {
    static thread_local std::vector<std::unique_ptr<char[]>> stacks;
    while (stacks.size() < n) stacks.emplace_back(new char[kFiberStack]);
    return stacks;
}

void finish_current(Block *blk) { blk->finished[blk->current] = 1; }

/* The four halves of a switch, as ASan wants them told (no-ops otherwise). */
inline void announce_to_fiber(Block &blk, unsigned t) {
#ifdef PTCU_ASAN_FIBERS
    __sanitizer_start_switch_fiber(&blk.scheduler_fake, blk.stack_base[t], kFiberStack);
#else
    (void)blk;
    (void)t;
#endif
}
inline void arrived_in_scheduler(Block &blk) {
#ifdef PTCU_ASAN_FIBERS
    __sanitizer_finish_switch_fiber(blk.scheduler_fake, nullptr, nullptr);
#else
    (void)blk;
#endif
}
inline void announce_to_scheduler(Block *blk, bool finished) {
#ifdef PTCU_ASAN_FIBERS
    /* A finished fiber never comes back: no fake stack to keep. */
    __sanitizer_start_switch_fiber(finished ? nullptr : &blk->fake_stack[blk->current], blk->scheduler_bottom,
                                   blk->scheduler_size);
#else
    (void)blk;
    (void)finished;
#endif
}
inline void arrived_in_fiber(Block *blk, bool first) {
#ifdef PTCU_ASAN_FIBERS
    /* The first arrival learns the scheduler's stack, to switch back to. */
    if (first)
        __sanitizer_finish_switch_fiber(nullptr, &blk->scheduler_bottom, &blk->scheduler_size);
    else
        __sanitizer_finish_switch_fiber(blk->fake_stack[blk->current], nullptr, nullptr);
#else
    (void)blk;
    (void)first;
#endif
}

} /* namespace */
} /* namespace ptcu_emu */

#if defined(__x86_64__)

/* ptcu_emu_switch(save, load): pushes the callee-saved registers, stores the
 * stack pointer in *save, loads `load` and pops the registers saved there;
 * `ret` then resumes whatever that stack was doing. */
extern "C" void ptcu_emu_switch(void **save, void *load);
asm(".text\n"
    ".p2align 4\n"
    ".globl ptcu_emu_switch\n"
    ".hidden ptcu_emu_switch\n"
    ".type ptcu_emu_switch,@function\n"
    "ptcu_emu_switch:\n"
    "  pushq %rbp\n  pushq %rbx\n  pushq %r12\n  pushq %r13\n  pushq %r14\n  pushq %r15\n"
    "  movq %rsp, (%rdi)\n"
    "  movq %rsi, %rsp\n"
    "  popq %r15\n  popq %r14\n  popq %r13\n  popq %r12\n  popq %rbx\n  popq %rbp\n"
    "  ret\n"
    ".size ptcu_emu_switch, .-ptcu_emu_switch\n");

namespace ptcu_emu {
namespace {

[[noreturn]] void fiber_entry() {
    Block *blk = tl_block;
    arrived_in_fiber(blk, true);
    (*blk->body)();
    finish_current(blk);
    announce_to_scheduler(blk, true);
    ptcu_emu_switch(&blk->fiber_sp[blk->current], blk->scheduler_sp);
    __builtin_unreachable(); /* a finished fiber is never resumed */
}

/* A fresh stack whose first switch "returns" into fiber_entry with the
 * alignment of a function entry (rsp + 8 a multiple of 16). */
void *fresh_stack(char *base) {
    uintptr_t top = ((uintptr_t)base + kFiberStack) & ~(uintptr_t)15;
    void **sp = (void **)top;
    *--sp = nullptr;                     /* fiber_entry's return address: none */
    *--sp = (void *)&fiber_entry;        /* where `ret` goes */
    for (int r = 0; r < 6; ++r) *--sp = nullptr; /* rbp rbx r12..r15 */
    return sp;
}

void start_fibers(Block &blk, unsigned n, std::vector<std::unique_ptr<char[]>> &stacks) {
    blk.fiber_sp.resize(n);
    for (unsigned t = 0; t < n; ++t) blk.fiber_sp[t] = fresh_stack(stacks[t].get());
}

void resume(Block &blk, unsigned t) {
    announce_to_fiber(blk, t);
    ptcu_emu_switch(&blk.scheduler_sp, blk.fiber_sp[t]);
    arrived_in_scheduler(blk);
}

} /* namespace */

void sync_block() {
    Block *blk = tl_block;
    announce_to_scheduler(blk, false);
    ptcu_emu_switch(&blk->fiber_sp[blk->current], blk->scheduler_sp);
    arrived_in_fiber(blk, false);
}

} /* namespace ptcu_emu */

#else /* ucontext */

namespace ptcu_emu {
namespace {

void fiber_entry() {
    Block *blk = tl_block;
    arrived_in_fiber(blk, true);
    (*blk->body)();
    finish_current(blk);
    announce_to_scheduler(blk, true); /* returning resumes uc_link: the scheduler */
}

void start_fibers(Block &blk, unsigned n, std::vector<std::unique_ptr<char[]>> &stacks) {
    blk.fibers.resize(n);
    for (unsigned t = 0; t < n; ++t) {
        ucontext_t &f = blk.fibers[t];
        if (getcontext(&f) != 0) std::abort();
        f.uc_stack.ss_sp = stacks[t].get();
        f.uc_stack.ss_size = kFiberStack;
        f.uc_link = &blk.scheduler;
        makecontext(&f, fiber_entry, 0);
    }
}

void resume(Block &blk, unsigned t) {
    announce_to_fiber(blk, t);
    if (swapcontext(&blk.scheduler, &blk.fibers[t]) != 0) std::abort();
    arrived_in_scheduler(blk);
}

} /* namespace */

void sync_block() {
    Block *blk = tl_block;
    announce_to_scheduler(blk, false);
    if (swapcontext(&blk->fibers[blk->current], &blk->scheduler) != 0) std::abort();
    arrived_in_fiber(blk, false);
}

} /* namespace ptcu_emu */

#endif

namespace ptcu_emu {

unsigned long long *shuffle_slots() { return tl_block->slots; }

void run_block(dim3 grid, dim3 block, dim3 block_idx, const std::function<void()> &body) {
    const unsigned n = block.x * block.y * block.z;
    auto &stacks = fiber_stacks(n);
    Block blk;
    blk.body = &body;
    blk.block = block;
    blk.finished.assign(n, 0);
#ifdef PTCU_ASAN_FIBERS
    blk.fake_stack.assign(n, nullptr);
    for (unsigned t = 0; t < n; ++t) blk.stack_base.push_back(stacks[t].get());
#endif
    Block *outer = tl_block;
    tl_block = &blk;
    tl_block_idx = block_idx;
    tl_block_dim = block;
    tl_grid_dim = grid;
    start_fibers(blk, n, stacks);
    for (bool live = true; live;) {
        live = false;
        for (unsigned t = 0; t < n; ++t) {
            if (blk.finished[t]) continue;
            blk.current = t;
            tl_thread_idx = dim3(t % block.x, (t / block.x) % block.y, t / (block.x * block.y));
            resume(blk, t);
            if (!blk.finished[t]) live = true;
        }
    }
    tl_block = outer;
}

} /* namespace ptcu_emu */
