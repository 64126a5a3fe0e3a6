"""Holding Ctrl-C back while a piece of state changes in more than one step.

A KeyboardInterrupt can be raised in the main thread after any call returns, so
state that takes two steps to change (append an arena here, its address there;
create a GPU object, then store it) can be left half-done by a press between the
steps, and later code then computes with it: an arena registered with Rust under
another arena's address gave simd results read from the wrong memory, and a press
inside cffi's parser (it takes its lock outside its ``try``) left the lock held.

``with sigint_held:`` swaps the SIGINT handler for one that only notes the press,
and re-raises the press (``signal.raise_signal``) as the outermost block ends, so the
user's handler runs then, with the state whole. Only the main thread gets
KeyboardInterrupt, so elsewhere the block costs nothing and holds nothing; blocks nest
(one swap for the outermost). A handler that is not a Python callable (ignored,
default, or installed from C) is left alone. The swap costs ~1.5 us (two sigaction
calls), so it guards rare paths (arena growth, GPU object creation, submits), never
the per-op path.

``taken_lock()`` is how one thread waits for another (workers' reads and syncs, DDP's
buckets): one C ``acquire()``, never a threading.Event (see there).
"""

import _signal as signal   # signal's enum wrappers cost ~7 us a call
import threading

_MAIN_THREAD = threading.main_thread().ident


class SigintHeld:
    __slots__ = ("depth", "hit", "saved", "_hold_fn")

    def __init__(self):
        self.depth = 0        # main-thread blocks open
        self.hit = False      # a press came while held
        self.saved = None     # the user's handler, while ours is installed
        self._hold_fn = self._hold

    def _hold(self, signum, frame):
        self.hit = True

    def __enter__(self):
        if threading.get_ident() != _MAIN_THREAD:
            return self
        if self.depth == 0:
            current = signal.getsignal(signal.SIGINT)
            if callable(current) and current is not self._hold_fn:
                self.hit = False
                signal.signal(signal.SIGINT, self._hold_fn)
                # from here on no KeyboardInterrupt is raised until __exit__
                self.saved = current
        self.depth += 1
        return self

    def __exit__(self, *exc):
        if threading.get_ident() != _MAIN_THREAD:
            return False
        self.depth -= 1
        if self.depth == 0 and self.saved is not None:
            saved, self.saved = self.saved, None
            signal.signal(signal.SIGINT, saved)
            if self.hit:
                self.hit = False
                signal.raise_signal(signal.SIGINT)   # the held-back press, handled now
        return False


sigint_held = SigintHeld()


def taken_lock():
    """A lock already taken, for one thread to wait on until another releases it: the
    waiter's ``acquire()`` is one C call, so a Ctrl-C interrupts it or comes after it. A
    threading.Event is not safe so: a press inside the Python code of Event.wait or
    Event.set can leave the Event's inner lock held (the setter then hangs) or not taken
    back ("release unlocked lock" instead of KeyboardInterrupt)."""
    lock = threading.Lock()
    lock.acquire()
    return lock
