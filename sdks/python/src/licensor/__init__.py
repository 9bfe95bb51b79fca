"""Licensor client SDK: offline licence verification, machine fingerprints and the online check.

Nothing here touches the network on import or inside ``verify_licence``; only
``LicenceClient.check()``, ``fetch()``, ``release()`` and the other client calls do.
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
    TrialStart,
    TrialStatus,
    VerifiedAnswer,
)
from .errors import ErrorCode, LicensorError
from .fingerprint import FingerprintReport, collect_fingerprint
from .keys import PublicKeyInput, PublicKeys
from .lease import LeaseKeeper
from .licence import LicenceRefusal, LicenceVerification, read_licence_file, verify_licence
from .updates import BlockedUpdate, Download, FeedUrls, ManifestSignature, Update, UpdateArtifact, UpdateCheck
from .usage import LicenceMeter, UsageBalance, UsageEvent, UsageEventResult, UsageReport
from .store import FileStore, MemoryStore, Record, StateKey, StateStore, default_store_dir, file_store, memory_store

__all__ = [
    "AirGapActivation",
    "AirGapDeactivation",
    "AirGapRequest",
    "BlockedUpdate",
    "CalendarStatus",
    "CheckResult",
    "CheckState",
    "Download",
    "ErrorCode",
    "FeedUrls",
    "FileStore",
    "FingerprintReport",
    "InvalidReason",
    "LeaseKeeper",
    "LicenceClient",
    "LicenceMeter",
    "LicenceRefusal",
    "LicenceVerification",
    "LicensorError",
    "ManifestSignature",
    "MemoryStore",
    "NoAnswer",
    "NoAnswerCode",
    "PublicKeyInput",
    "PublicKeys",
    "Record",
    "ReleaseRefusal",
    "ReleaseResult",
    "StateKey",
    "StateStore",
    "TrialStart",
    "TrialStatus",
    "Update",
    "UpdateArtifact",
    "UpdateCheck",
    "UsageBalance",
    "UsageEvent",
    "UsageEventResult",
    "UsageReport",
    "VerifiedAnswer",
    "collect_fingerprint",
    "default_store_dir",
    "file_store",
    "memory_store",
    "read_licence_file",
    "verify_licence",
]
