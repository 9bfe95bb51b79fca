"""Licensor client SDK: offline licence verification, machine fingerprints and the online check.

Nothing here touches the network on import or inside ``verify_licence``; only
``LicenceClient.check()``, ``fetch()`` and ``release()`` do.
"""

from ._wire import CalendarStatus
from .client import (
    AirGapActivation,
    AirGapDeactivation,
    AirGapRequest,
    CheckResult,
    CheckState,
    InvalidReason,
    LicenceClient,
    NoAnswer,
    NoAnswerCode,
    ReleaseRefusal,
    ReleaseResult,
    VerifiedAnswer,
)
from .errors import ErrorCode, LicensorError
from .fingerprint import FingerprintReport, collect_fingerprint
from .keys import PublicKeyInput, PublicKeys
from .lease import LeaseKeeper
from .licence import LicenceRefusal, LicenceVerification, verify_licence
from .state import FileState, MemoryState, Record, StateKey, StateStore, default_state_dir, file_state, memory_state

__all__ = [
    "AirGapActivation",
    "AirGapDeactivation",
    "AirGapRequest",
    "CalendarStatus",
    "CheckResult",
    "CheckState",
    "ErrorCode",
    "FileState",
    "FingerprintReport",
    "InvalidReason",
    "LeaseKeeper",
    "LicenceClient",
    "LicenceRefusal",
    "LicenceVerification",
    "LicensorError",
    "MemoryState",
    "NoAnswer",
    "NoAnswerCode",
    "PublicKeyInput",
    "PublicKeys",
    "Record",
    "ReleaseRefusal",
    "ReleaseResult",
    "StateKey",
    "StateStore",
    "VerifiedAnswer",
    "collect_fingerprint",
    "default_state_dir",
    "file_state",
    "memory_state",
    "verify_licence",
]
