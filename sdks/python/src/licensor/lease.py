"""Keeps a floating licence's lease alive while the application runs (DESIGN 13)."""

from __future__ import annotations

import random
import signal
import threading
from types import FrameType
from typing import Any, Callable

from .client import CheckResult, LicenceClient, _parse_time
from .errors import LicensorError

Listener = Callable[[CheckResult], None]


class LeaseKeeper:
    """Checks every max(``lse`` / 3, 60 s) with ±10% jitter on a background thread, retries a
    failed renewal at once, and tells the application:

    - ``on_result(result)`` after every check;
    - ``on_at_risk(result)`` when a renewal got no answer and the lease ends before the next
      attempt: the lease is about to be lost unless the service answers;
    - ``on_lost(result)`` when the state stops being VALID (the lease lapsed, the seats are full,
      the licence was revoked...);
    - ``on_error(error)`` when ``fetch()`` of a renewed term fails (the lease goes on).

    When an answer says ``renewed`` it calls ``client.fetch()``. ``stop()`` (and SIGINT or SIGTERM,
    when started from the main thread with ``handle_signals``) releases the lease, never a borrowed
    one. The lease length is the longest outage of the service a floating site survives.
    """

    def __init__(
        self,
        client: LicenceClient,
        *,
        on_result: Listener | None = None,
        on_at_risk: Listener | None = None,
        on_lost: Listener | None = None,
        on_error: Callable[[Exception], None] | None = None,
        handle_signals: bool = True,
        interval: float | None = None,
    ) -> None:
        self.client = client
        self._listeners = {"result": on_result, "at_risk": on_at_risk, "lost": on_lost}
        self._on_error = on_error
        self._handle_signals = handle_signals
        self._interval = interval
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None
        self._previous: dict[int, Any] = {}
        self.last: CheckResult | None = None

    def start(self) -> CheckResult:
        """Takes the lease (one check, on the calling thread) and keeps it from then on."""
        result = self._renew()
        self._thread = threading.Thread(target=self._run, name="licensor-lease", daemon=True)
        self._thread.start()
        if self._handle_signals and threading.current_thread() is threading.main_thread():
            for number in (signal.SIGINT, signal.SIGTERM):
                self._previous[number] = signal.signal(number, self._on_signal)
        return result

    def stop(self) -> None:
        """Stops renewing and releases the lease, unless it is borrowed (only an operator frees
        a borrowed seat early). A release that fails is passed to ``on_error``."""
        self._stopping.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join()
        for number, previous in self._previous.items():
            signal.signal(number, previous)
        self._previous.clear()
        if self.last is not None and self.last.state == "VALID" and not _borrowed(self.last):
            try:
                self.client.release()
            except LicensorError as error:
                self._error(error)

    def _on_signal(self, number: int, frame: FrameType | None) -> None:
        previous = self._previous.get(number)
        self.stop()
        if callable(previous):
            previous(number, frame)
        elif previous == signal.SIG_DFL:
            signal.raise_signal(number)

    def _run(self) -> None:
        while not self._stopping.wait(self._next_wait()):
            result = self._renew()
            if result.no_answer is not None and not self._stopping.is_set():
                result = self._renew()  # a failed renewal is retried at once
                if result.no_answer is not None and self._ends_before_next_attempt(result):
                    self._tell("at_risk", result)

    def _renew(self) -> CheckResult:
        was_valid = self.last is not None and self.last.state == "VALID"
        result = self.client.check()
        self.last = result
        self._tell("result", result)
        if was_valid and result.state != "VALID":
            self._tell("lost", result)
        if result.renewed:
            try:
                self.client.fetch()
            except LicensorError as error:
                self._error(error)
        return result

    def _next_wait(self) -> float:
        if self._interval is not None:
            return self._interval
        claims = (self.last.licence.claims if self.last is not None else None) or {}
        lease_seconds = float(claims.get("lse", 180))
        return max(lease_seconds / 3, 60.0) * random.uniform(0.9, 1.1)

    def _ends_before_next_attempt(self, result: CheckResult) -> bool:
        if result.lease_ends_at is None:
            return False
        ends = _parse_time(result.lease_ends_at)
        now = self.client.now_ms()
        return ends is not None and ends - now <= self._next_wait() * 1000

    def _tell(self, what: str, result: CheckResult) -> None:
        listener = self._listeners[what]
        if listener is not None:
            listener(result)

    def _error(self, error: Exception) -> None:
        if self._on_error is not None:
            self._on_error(error)


def _borrowed(result: CheckResult) -> bool:
    """A lease that ends later than one lease length after its check was borrowed."""
    answer, lse = result.answer, (result.licence.claims or {}).get("lse")
    if answer is None or not answer.lease_ends_at or lse is None:
        return False
    ends, checked = _parse_time(answer.lease_ends_at), _parse_time(answer.checked_at)
    return ends is not None and checked is not None and ends - checked > lse * 1000
