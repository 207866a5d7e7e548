"""``mem_alloc.free`` and ``munmap`` of a pointer that is not a live block of their own kind are
refused with a PyverbsUserError naming the pointer, not passed to the C library: glibc aborts on a
double or interior free (SIGABRT) and a random pointer may crash (SIGSEGV) or corrupt the heap.
Each bad call runs in a child process, so that the test proves the interpreter survives it."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

from rdmasim.pyverbs import mem_alloc

# The child's prelude: allocate, then try the bad call; print what was raised, exit 0.
_CHILD = """
import ctypes
from rdmasim.pyverbs import mem_alloc
from rdmasim.errors import PyverbsUserError
p = mem_alloc.malloc(256)
q = mem_alloc.posix_memalign(4096, 64)
m = mem_alloc.mmap(length=8192)
other = ctypes.create_string_buffer(64)  # real memory, not a mem_alloc block
try:
{call}
except PyverbsUserError as exc:
    print("refused:", exc)
else:
    print("accepted")
print(f"p={p:x} q={q:x} m={m:x}")
"""

# case: (the bad call, what the refusal says; {p} {q} {m} are the blocks' addresses in hex)
BAD_CALLS = {
    "freed twice": ("mem_alloc.free(p); mem_alloc.free(p)", "free(0x{p}): 0x{p} was already freed"),
    "interior pointer": ("mem_alloc.free(p + 16)",
                         "is inside the block at 0x{p} (256 bytes from malloc), 16 bytes in: release it "
                         "with free(0x{p})"),
    "interior of an aligned block": ("mem_alloc.free(q + 64)", "inside the block at 0x{q}"),
    "random pointer": ("mem_alloc.free(0x12345678)", "0x12345678 was not allocated by"),
    "memory not from mem_alloc": ("mem_alloc.free(ctypes.addressof(other))", "was not allocated by"),
    "an mmap block": ("mem_alloc.free(m)", "free(0x{m}): the block is from mmap: release it with munmap"),
    "munmap of a malloc block": ("mem_alloc.munmap(p, 256)", "munmap(0x{p}): the block is from malloc"),
    "munmap of a random pointer": ("mem_alloc.munmap(0x7f0000000000, 4096)", "was not mapped by"),
    "munmap twice": ("mem_alloc.munmap(m, 8192); mem_alloc.munmap(m, 8192)", "already unmapped"),
    "munmap beyond the mapping": ("mem_alloc.munmap(m, 1 << 20)", "length 1048576 is beyond"),
}


@pytest.mark.parametrize("case", list(BAD_CALLS))
def test_a_bad_free_is_refused_and_the_process_survives(case: str) -> None:
    call, says = BAD_CALLS[case]
    code = _CHILD.replace("{call}", "    " + call)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    r = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                       env=env, check=False)
    assert r.returncode == 0, f"{case}: the child died (status {r.returncode}): {r.stderr[-500:]}"
    first, addrs = r.stdout.splitlines()[0], dict(kv.split("=") for kv in r.stdout.split()[-3:])
    assert first.startswith("refused: "), r.stdout + r.stderr
    assert says.format(**addrs) in first, first


def test_free_of_null_does_nothing_and_reused_addresses_free_again() -> None:
    """``free(NULL)`` is a no-op, as in C; an address malloc hands out again after a free is a
    live block again."""
    mem_alloc.free(0)
    seen = set()
    for _ in range(4):
        p = mem_alloc.malloc(64)
        seen.add(p)
        mem_alloc.free(p)
    assert seen  # each freed once, whether or not malloc reused the address


def test_munmap_of_the_first_pages_keeps_the_rest_a_mapping() -> None:
    """``munmap(addr, n)`` unmaps the first pages of a mapping, as munmap(2) does; the rest is
    still a mapping from mem_alloc (registrable, and unmapped by its own start)."""
    page = mem_alloc._PAGE
    m = mem_alloc.mmap(length=3 * page)
    mem_alloc.munmap(m, page)
    assert mem_alloc.block_of(m, 1) is None
    assert mem_alloc.block_of(m + page, 2 * page) == (m + page, 2 * page, "mmap")
    mem_alloc.munmap(m + page, 2 * page)
    assert mem_alloc.block_of(m + page, 1) is None
