"""rdma-core's runner (``tests/run_tests.py`` from the pyverbs 59.0 sdist, unmodified) under
``rdmasim exec``: ``rdmasim.pyverbs``'s devices are then the fabric daemon's hosts, so the tests
that fork processes sharing one fabric (test_rdmacm's passive and active sides) can run, with the
emulated rdma_cm. As on a machine with rxe, each device has a network interface with the host's
IPv4 address: an ``rdma`` shim answers ``rdma link show -j`` with one netdev per device and an
``ip`` shim answers ``ip -j addr show NETDEV`` with the host's address and MAC, both asked of the
daemon.

Usage::

    PYTHONPATH=$PWD python tests/pyverbs_suite/daemon_runner.py [test_rdmacm ...] [--report out.md]
    PYTHONPATH=$PWD python tests/pyverbs_suite/daemon_runner.py --all   # the whole runner
"""

from __future__ import annotations

import argparse
import itertools
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import whole_runner as wr  # noqa: E402

_HOSTS = """
import json, os, socket, struct
from rdmasim.fabricd import proto
s = socket.socket(socket.AF_UNIX); s.connect(os.environ["RDMASIM_FABRIC_SOCKET"])
def call(op, words=(), data=b""):
    head = struct.pack("<IIII", op, len(words), len(data), 0)
    s.sendall(head + struct.pack(f"<{len(words)}Q", *words) + data)
    st, nw, nb, _ = struct.unpack("<iIII", s.recv(16, socket.MSG_WAITALL))
    w = s.recv(8 * nw, socket.MSG_WAITALL) if nw else b""
    return s.recv(nb, socket.MSG_WAITALL) if nb else b""
call(proto.C["RSD_HELLO"], (proto.VERSION, os.getpid(), 1))
HOSTS = json.loads(call(proto.C["RSD_PY_HOST_INFO"]))["hosts"]
"""

_RDMA_SHIM = """#!{python}
# `rdma link show -j` on the emulated fabric: device rxeN's netdev is rsimN (asked as a holder:
# never a process simulated time waits for)
import json, sys
{hosts}
if sys.argv[1:3] == ["link", "show"]:
    print(json.dumps([{{"ifindex": i, "ifname": f"rxe{{i}}", "port": 1, "state": "ACTIVE",
                       "physical_state": "LINK_UP", "netdev": f"rsim{{i}}"}} for i in range(len(HOSTS))]))
else:
    print("[]")
"""

_IP_SHIM = """#!{python}
# `ip -j addr show rsimN` on the emulated fabric: host N's IPv4 address and MAC
import json, os, sys
{hosts}
args = sys.argv[1:]
name = args[-1] if args else ""
ours = name.startswith("rsim") and name[4:].isdigit() and int(name[4:]) < len(HOSTS)
if "-j" in args and "addr" in args and ours:
    h = HOSTS[int(name[4:])]
    print(json.dumps([{{"ifname": name, "address": h["mac"],
                       "addr_info": [{{"family": "inet", "local": h["ip"], "prefixlen": 24}}]}}]))
else:
    os.execv("{ip}", ["ip", *args])
"""

_names = itertools.count()


def prepare(sdist: Path, work: Path) -> Path:
    """The sdist's tests and the shims of whole_runner, plus the daemon-mode ``rdma`` and ``ip``."""
    wr.prepare(sdist, work)
    bindir = work / "bin"
    real_ip = shutil.which("ip") or "/usr/sbin/ip"
    (bindir / "rdma").write_text(_RDMA_SHIM.format(python=sys.executable, hosts=_HOSTS))
    (bindir / "ip").write_text(_IP_SHIM.format(python=sys.executable, hosts=_HOSTS, ip=real_ip))
    for shim in ("rdma", "ip"):
        (bindir / shim).chmod(0o755)
    return work


def run(work: Path, *args: str, dev: str = "rxe0", timeout: float = 1800) -> wr.WholeRun:
    """``rdmasim exec -- rdmasim pyverbs-run tests/run_tests.py --dev DEV ARGS...`` in ``work``,
    on a fabric of its own (the default scenario: h0 and h1 on one switch)."""
    env = dict(os.environ)
    env["PATH"] = f"{work / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(wr.ROOT), env.get("PYTHONPATH", "")) if p)
    fabric = f"runner{os.getpid()}x{next(_names)}"
    cmd = [sys.executable, "-m", "rdmasim", "exec", "--fabric", fabric, "--", sys.executable, "-m",
           "rdmasim.cli", "pyverbs-run", "tests/run_tests.py", "--dev", dev, *args]
    proc = subprocess.run(cmd, cwd=work, env=env, capture_output=True, text=True, timeout=timeout)
    output = proc.stdout + proc.stderr
    tests, ran = wr.parse(output)
    return wr.WholeRun(proc.returncode, output, tests, ran)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("files", nargs="*", default=["test_rdmacm"], help="test files (default: test_rdmacm)")
    ap.add_argument("--all", action="store_true", help="run every test file, as run_tests.py does by default")
    ap.add_argument("--dev", default="rxe0")
    ap.add_argument("--report", type=Path, default=None)
    ap.add_argument("--keep", type=Path, default=None)
    args = ap.parse_args(argv)
    try:
        sdist = wr.rc.fetch_sdist()
    except wr.rc.SuiteUnavailable as exc:
        print(f"rdma-core runner not run: {exc}", file=sys.stderr)
        return 2
    work = args.keep or Path(tempfile.mkdtemp(prefix="rdmasim-daemon-tests-"))
    try:
        prepare(sdist, work)
        res = run(work, "-v", *([] if args.all else args.files), dev=args.dev,
                  timeout=3600 if args.all else 1800)
    finally:
        if args.keep is None:
            shutil.rmtree(work, ignore_errors=True)
    report = wr.markdown(res, f"rdma-core `run_tests.py` from pyverbs=={wr.rc.PYVERBS_VERSION} under "
                              f"`rdmasim exec -- rdmasim pyverbs-run`, device {args.dev} "
                              f"(exit status {res.returncode})")
    if args.report:
        args.report.write_text(report)
    print(report)
    if res.returncode and not res.tests:
        print(res.output[-3000:])
    return res.returncode


if __name__ == "__main__":
    sys.exit(main())
