"""The SDK's one exception family: every failure carries a code an application can switch on."""

from __future__ import annotations

from typing import Literal

ErrorCode = Literal[
    "INVALID_KEY",
    "INVALID_OPTIONS",
    "NOT_CHECKABLE",
    "TIMEOUT",
    "NETWORK",
    "HTTP_STATUS",
    "BAD_RESPONSE",
    "BAD_RECEIPT",
    "BAD_LICENCE",
    "LID_MISMATCH",
    "OLDER_TERM",
    "BAD_ACTIVATION",
    "TRIALS_OFF",
    "TRIAL_USED",
    "QUEUE_FULL",
    "BAD_MANIFEST",
    "DIGEST_MISMATCH",
]


class LicensorError(Exception):
    """What went wrong, as a constant (``code``) and a message; ``status`` for ``HTTP_STATUS``.

    - ``INVALID_KEY``: a public key could not be read, or none was given.
    - ``INVALID_OPTIONS``: a client option is missing or malformed.
    - ``NOT_CHECKABLE``: the licence is OFFLINE (or unreadable), so it has no check path.
    - ``TIMEOUT``, ``NETWORK``: the service did not answer in time, or could not be reached.
    - ``HTTP_STATUS``: the service answered with something other than 200.
    - ``BAD_RESPONSE``: a 200 whose body is not the documented JSON.
    - ``BAD_RECEIPT``: a check answer whose receipt does not verify for this licence, nonce and machine.
    - ``BAD_LICENCE``: a fetched licence (or the one in use) does not verify with the product's key(s).
    - ``LID_MISMATCH``: a fetched licence verifies but is another licence than the one presented.
    - ``OLDER_TERM``: a fetched term is older (``iat``) than one this machine has already seen.
    - ``BAD_ACTIVATION``: an air-gapped activation response not for this installation, machine,
      pending request or product, a deactivated one, or one that does not verify; or a
      deactivation with no activation to end.
    - ``TRIALS_OFF``: start_trial() was refused: the product offers no trials now (DESIGN 18).
    - ``TRIAL_USED``: start_trial() was refused: a machine like this one already had a trial
      (``matched`` names the equal fingerprint components).
    - ``QUEUE_FULL``: record_usage() found 1,000 events of this licence still waiting to be sent.
    - ``BAD_MANIFEST``: check_for_update() was answered an update whose signed manifest does not
      verify with a key the application knows, or is not this product's, version, channel and
      files, or not above the running version (DESIGN 20).
    - ``DIGEST_MISMATCH``: download() got bytes whose size or SHA-256 are not the manifest's: the
      file was deleted.

    ``retry_after_seconds`` is an HTTP 429's ``Retry-After`` (a trial limit, a usage rate), else None;
    ``reason`` the answer's ``reason`` for an ``HTTP_STATUS`` that named one (``UPDATES_EXPIRED``,
    ``NO_SEAT``, ``REVOKED``, …), else None.

    ``LicenceClient.check()`` never raises it for what the service does: those answers are data.
    """

    def __init__(
        self,
        code: ErrorCode,
        message: str,
        status: int | None = None,
        *,
        matched: list[str] | None = None,
        retry_after_seconds: int | None = None,
        reason: str | None = None,
    ) -> None:
        super().__init__(message)
        self.code: ErrorCode = code
        self.message = message
        self.status = status
        self.matched = matched
        self.retry_after_seconds = retry_after_seconds
        self.reason = reason

    def __repr__(self) -> str:
        status = "" if self.status is None else f", status={self.status}"
        return f"LicensorError({self.code!r}, {self.message!r}{status})"

