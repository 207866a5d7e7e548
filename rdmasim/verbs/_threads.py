"""Whether another thread of the program may still post work (the empty-poll safety net)."""

from __future__ import annotations

import threading


def another_thread_may_act() -> bool:
    """True when a thread other than the caller is alive and not a daemon.

    A blocking verbs call on an idle simulation waits (as libibverbs does) only while such a
    thread lives: it may still post the work the call waits for. Daemon threads are left out:
    they are the helpers of libraries and notebooks (progress-bar monitors, kernel heartbeats)
    that never post, and a program's own worker threads are not daemons unless it says so.
    """
    me = threading.current_thread()
    return any(t is not me and t.is_alive() and not t.daemon for t in threading.enumerate())
