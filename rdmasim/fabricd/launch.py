"""``rdmasim exec``: run a program on an emulated fabric, starting the fabric's daemon if none runs.

The daemon of fabric NAME listens on ``$XDG_RUNTIME_DIR/rdmasim/NAME.sock`` (``/tmp/rdmasim-UID/``
without XDG_RUNTIME_DIR) and holds ``NAME.lock`` while it lives, so a second daemon on the same name
is refused. ``rdmasim exec`` attaches to the daemon as a holder (it keeps the daemon alive but never
stops simulated time), then replaces itself with the program, which inherits that connection:
the daemon lives until the last program on it has exited.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import socket
import struct
import subprocess
import sys
import time
from pathlib import Path

from rdmasim.errors import UserInputError
from rdmasim.fabricd import build_lib, proto

LIB_NAME = "librdmasim_ibverbs.so"
_HERE = Path(__file__).resolve().parent
VERBS_H = Path("/usr/include/infiniband/verbs.h")


def runtime_dir() -> Path:
    """Where the daemons' sockets, locks and logs live."""
    base = os.environ.get("XDG_RUNTIME_DIR")
    d = Path(base) / "rdmasim" if base else Path(f"/tmp/rdmasim-{os.getuid()}")
    d.mkdir(mode=0o700, parents=True, exist_ok=True)
    return d


def socket_path(fabric: str) -> Path:
    """The Unix socket of fabric ``fabric``'s daemon."""
    if not fabric or "/" in fabric or fabric.startswith("."):
        raise UserInputError(f"--fabric {fabric!r}: a fabric name is a plain word (letters, digits, -_)")
    return runtime_dir() / f"{fabric}.sock"


def build_library(out: Path, cc: str | None = None) -> Path:
    """Compile ``librdmasim_ibverbs.so`` to ``out`` (raises UserInputError naming what to install)."""
    try:
        return build_lib.build(out, cc, VERBS_H)
    except RuntimeError as exc:
        raise UserInputError(f"{LIB_NAME} is not built: {exc}; then run the command again") from None


def library() -> Path:
    """The preload library: the one ``pip install`` built beside this module, else one built now into
    the user's cache (keyed by the sources' hash)."""
    env = os.environ.get("RDMASIM_IBVERBS_LIB")
    if env:
        return Path(env)
    here = _HERE / LIB_NAME
    sources = [_HERE / name for name in build_lib.INPUTS]
    if here.is_file() and all(here.stat().st_mtime >= p.stat().st_mtime for p in sources):
        return here  # built by pip install (and not older than its sources, in a source tree)
    h = hashlib.sha256()
    for name in build_lib.INPUTS:
        h.update((_HERE / name).read_bytes())
    if VERBS_H.is_file():
        h.update(VERBS_H.read_bytes())
    cache = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "rdmasim" / h.hexdigest()[:16]
    lib = cache / LIB_NAME
    return lib if lib.is_file() else build_library(lib)


def _connect(path: Path) -> socket.socket | None:
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        s.connect(str(path))
    except OSError:
        s.close()
        return None
    return s


def _hello(s: socket.socket, host: str | None = None) -> list[int]:
    """Attach as a holder; the daemon checks ``host`` (a name of its fabric) on the way."""
    name = (host or "").encode()
    s.sendall(struct.pack("<IIII", proto.C["RSD_HELLO"], 3, len(name), 0)
              + struct.pack("<3Q", proto.VERSION, os.getpid(), 1) + name)
    hdr = _read(s, 16)
    status, nw, nb, _ = struct.unpack("<iIII", hdr)
    words = list(struct.unpack(f"<{nw}Q", _read(s, 8 * nw))) if nw else []
    msg = _read(s, nb).decode(errors="replace") if nb else ""
    if status < 0:
        raise UserInputError(f"rdmasim exec: {msg}")
    return words


def _read(s: socket.socket, n: int) -> bytes:
    return proto.recv_exact(s, n, closed="the fabric daemon closed the connection", error=UserInputError)


def start_daemon(fabric: str, scenario: str | None, pcap: str | None,
                 timeout_s: float = 60.0) -> socket.socket:
    """Start fabric ``fabric``'s daemon in the background; return a connection to it, which holds
    it open (a daemon whose every connection has gone exits).

    The exec that takes the fabric's lock starts the daemon and hands it the locked file, so when
    several execs start at once exactly one daemon starts, with the first one's --scenario and --pcap;
    the others wait for it."""
    path = socket_path(fabric)
    log = path.with_suffix(".log")
    lock_path = path.with_suffix(".lock")
    proc = _spawn_if_free(fabric, scenario, pcap, log, lock_path)
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        s = _connect(path)
        if s is not None:
            return s
        if proc is None:  # another exec's daemon is starting, or ending: start ours once it has gone
            proc = _spawn_if_free(fabric, scenario, pcap, log, lock_path)
        elif proc.poll() is not None:
            text = log.read_text(errors="replace").strip()
            last = text.splitlines()[-1] if text else ""
            raise UserInputError(f"the fabric daemon of {fabric!r} did not start: {last} (log: {log})")
        time.sleep(0.02)
    raise UserInputError(f"the fabric daemon of {fabric!r} did not answer within {timeout_s:.0f} s "
                         f"(log: {log})")


def _spawn_if_free(fabric: str, scenario: str | None, pcap: str | None, log: Path,
                   lock_path: Path) -> subprocess.Popen[bytes] | None:
    """Take the fabric's lock and start the daemon with it; None when someone holds the lock."""
    lockf = open(lock_path, "a")  # noqa: SIM115 - handed to the daemon, closed here after
    try:
        try:
            fcntl.flock(lockf, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return None
        cmd = [sys.executable, "-m", "rdmasim.fabricd", "--fabric", fabric, "--lock-fd", str(lockf.fileno())]
        if scenario:
            cmd += ["--scenario", str(Path(scenario).resolve())]
        if pcap:
            cmd += ["--pcap", str(Path(pcap).resolve())]
        with open(log, "ab") as logf:
            return subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=logf, stderr=logf,
                                    start_new_session=True, pass_fds=(lockf.fileno(),))
    finally:
        lockf.close()  # the daemon's copy keeps the lock for its life


def exec_program(argv: list[str], *, fabric: str = "default", host: str | None = None,
                 scenario: str | None = None, pcap: str | None = None, sim_clock: bool = False) -> None:
    """Replace this process with ``argv`` running on fabric ``fabric`` (started if needed)."""
    if not argv:
        raise UserInputError("rdmasim exec needs a program: rdmasim exec [options] -- PROGRAM ARGS...")
    lib = library()
    path = socket_path(fabric)
    s = _connect(path)
    if s is None:
        s = start_daemon(fabric, scenario, pcap)
    elif scenario or pcap:
        print(f"rdmasim exec: fabric {fabric!r} is already running: --scenario/--pcap apply when it starts "
              "(they are ignored here)", file=sys.stderr)
    _hello(s, host)
    env = dict(os.environ)
    # after what is preloaded already (a sanitizer runtime must come first); before libibverbs anyway
    env["LD_PRELOAD"] = " ".join(x for x in (env.get("LD_PRELOAD", ""), str(lib)) if x)
    env["RDMASIM_FABRIC_SOCKET"] = str(path)
    if sim_clock:
        env["RDMASIM_CLOCK"] = "sim"
    if host:
        env["RDMASIM_HOST"] = host
    else:
        env.pop("RDMASIM_HOST", None)
    os.set_inheritable(s.fileno(), True)  # the holder connection lives as long as the program
    exe = shutil.which(argv[0]) if "/" not in argv[0] else argv[0]
    if exe is None:
        raise UserInputError(f"rdmasim exec: program {argv[0]!r} not found on PATH")
    sys.stdout.flush()
    sys.stderr.flush()
    os.execve(exe, argv, env)


def serve(fabric: str, scenario: str | None, pcap: str | None, lock_fd: int | None = None) -> int:
    """The daemon's main: take the lock (or the locked ``lock_fd`` its exec handed over), build the
    fabric, listen and serve until the last program goes."""
    from rdmasim.fabricd.server import Daemon

    path = socket_path(fabric)
    lockf = open(lock_fd if lock_fd is not None else path.with_suffix(".lock"), "a")  # noqa: SIM115
    try:
        fcntl.flock(lockf, fcntl.LOCK_EX | fcntl.LOCK_NB)  # held for the daemon's life
    except BlockingIOError:
        print(f"rdmasim fabric daemon: fabric {fabric!r} already has a daemon "
              f"(lock {path.with_suffix('.lock')} "
              "is held); refusing to start a second one", file=sys.stderr)
        return 3
    sim = _build_sim(scenario)
    if pcap:
        sim.capture(pcap)
    if path.exists():
        path.unlink()  # a crashed daemon's socket: nobody answers it (we hold the lock)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(path))
    listener.listen(64)
    try:
        daemon = Daemon(sim, str(path), idle_ms=_idle_ms())
        daemon.serve(listener)
        print(f"rdmasim fabric daemon: served {daemon.calls} requests; simulated time {sim.now} ps, "
              f"{sim.events} events", flush=True)
    finally:
        listener.close()
        try:
            path.unlink()
        except FileNotFoundError:
            pass
        if pcap:
            sim.close_capture()
    return 0


def _idle_ms() -> float:
    """RDMASIM_IDLE_MS: how long a process may stay out of verbs calls before it counts as waiting
    (default 50; 0: never, for bit-exact runs of programs that always wait in verbs calls)."""
    text = os.environ.get("RDMASIM_IDLE_MS", "50")
    try:
        v = float(text)
    except ValueError:
        v = -1.0
    if not 0 <= v <= 3_600_000:
        raise UserInputError(f"RDMASIM_IDLE_MS={text!r}: give milliseconds in 0..3600000 (0: never)")
    return v


def _build_sim(scenario: str | None):  # type: ignore[no-untyped-def]
    if scenario:
        from rdmasim.scenario.load import load
        from rdmasim.scenario.run import build

        return build(load(scenario, fabric_only=True))
    from rdmasim import topology

    return topology.star(2).sim
