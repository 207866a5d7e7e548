/* Watching a program spin on its registered memory (RDMASIM_WATCH_MEMORY=1; x86-64).
 *
 * Some programs wait for a peer's RDMA WRITE by reading their own registered memory in a loop
 * (ib_write_lat), a wait the daemon cannot see. With the watch on, every verbs call leaves the
 * registered pages inaccessible (PROT_NONE; the daemon's own mapping of them is untouched). A load
 * from one of them faults: the handler makes the page readable for that one instruction (the trap
 * flag single-steps it, then the page is closed again), so every load is seen. SPINS consecutive
 * loads by one instruction from one address, without a verbs call between them, are a spin: the
 * process then waits in the daemon (RSD_MEMWAIT) until those bytes change or the fabric goes quiet,
 * as a poll of an empty CQ waits. A store opens its page until the next verbs call.
 *
 * So the point where a spinning program counts as waiting is a point in its own instruction
 * stream, the same in every run, not a span of host time (RDMASIM_IDLE_MS). The price is a trap per
 * load from registered memory and one per page stored to; system calls that read or write
 * registered memory directly (read(2) into it, write(2) from it) fail with EFAULT while the watch is on. */
#define _GNU_SOURCE
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

#include "rsd.h"

#define SPINS 3
#define TRAP_FLAG 0x100

struct watch {
    int on; /* -1: not read yet */
    int installed;
    long page;
    struct sigaction old_segv, old_trap;
};

static struct watch W = {.on = -1};

/* per thread: the page to close after the single step, and the loads seen since the last call */
static __thread uintptr_t step_page;
static __thread uintptr_t last_addr, last_ip;
static __thread int reads;

#if defined(__x86_64__)

static void chain(int sig, siginfo_t *si, void *ctx, const struct sigaction *old)
{
    if ((old->sa_flags & SA_SIGINFO) && old->sa_sigaction) {
        old->sa_sigaction(sig, si, ctx);
    } else if (old->sa_handler != SIG_DFL && old->sa_handler != SIG_IGN) {
        old->sa_handler(sig);
    } else { /* the default action: as if the library were not there */
        sigaction(sig, old, NULL);
        if (sig == SIGTRAP)
            raise(sig);
        /* SIGSEGV: the faulting instruction runs again and takes the default action */
    }
}

static void on_segv(int sig, siginfo_t *si, void *vctx)
{
    ucontext_t *uc = vctx;
    uintptr_t a = (uintptr_t)si->si_addr;
    if (si->si_code != SEGV_ACCERR || !rsd_in_segment(a)) {
        chain(sig, si, vctx, &W.old_segv);
        return;
    }
    uintptr_t page = a & ~(uintptr_t)(W.page - 1);
    if (uc->uc_mcontext.gregs[REG_ERR] & 2) { /* a store: the page stays open until the next call */
        mprotect((void *)page, (size_t)W.page, PROT_READ | PROT_WRITE);
        return;
    }
    uintptr_t ip = (uintptr_t)uc->uc_mcontext.gregs[REG_RIP];
    if (a == last_addr && ip == last_ip) {
        reads++;
    } else {
        reads = 1;
        last_addr = a;
        last_ip = ip;
    }
    if (reads >= SPINS) {
        uint64_t w[2] = {a, 8};
        rsd_call(RSD_MEMWAIT, w, 2, NULL, 0, NULL, 0, NULL); /* closes every page again as it returns */
        reads = 0;
    }
    mprotect((void *)page, (size_t)W.page, PROT_READ);
    step_page = page;
    uc->uc_mcontext.gregs[REG_EFL] |= TRAP_FLAG;
}

static void on_trap(int sig, siginfo_t *si, void *vctx)
{
    ucontext_t *uc = vctx;
    if (!step_page) {
        chain(sig, si, vctx, &W.old_trap);
        return;
    }
    uc->uc_mcontext.gregs[REG_EFL] &= ~(greg_t)TRAP_FLAG;
    mprotect((void *)step_page, (size_t)W.page, PROT_NONE);
    step_page = 0;
}

static void install(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&sa.sa_mask);
    sa.sa_sigaction = on_segv;
    sigaction(SIGSEGV, &sa, &W.old_segv);
    sa.sa_sigaction = on_trap;
    sigaction(SIGTRAP, &sa, &W.old_trap);
}

#endif

int rsd_watch_on(void)
{
    if (W.on < 0) {
        const char *v = getenv("RDMASIM_WATCH_MEMORY");
        W.on = v && *v && strcmp(v, "0") != 0;
#if !defined(__x86_64__)
        W.on = 0; /* single-stepping a load is written for x86-64 only */
#endif
        W.page = sysconf(_SC_PAGESIZE);
    }
#if defined(__x86_64__)
    if (W.on && !W.installed) {
        install();
        W.installed = 1;
    }
#endif
    return W.on;
}

void rsd_watch_reset(void)
{
    reads = 0;
    last_addr = last_ip = 0;
}
