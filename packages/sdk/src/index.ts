export { LicensorError, type LicensorErrorCode, type LicensorErrorDetails } from './errors.js';
export type { PublicKeyInput, PublicKeys } from './keys.js';
export {
  verifyLicence,
  type LicenceRefusal,
  type LicenceVerification,
  type SignedLicence,
  type RefusedLicence,
  type VerifyOptions,
} from './verify.js';
export { readLicenceFile } from './licence-file.js';
export { collectFingerprint, type FingerprintOptions, type FingerprintReport } from './fingerprint.js';
export { fileStore, memoryStore, defaultStoreDir, type StoredState, type StateKey, type StateStore, type StoredAnswer } from './store.js';
export {
  LicenceClient,
  type LicenceClientOptions,
  type CheckResult,
  type CheckState,
  type InvalidReason,
  type NoAnswer,
  type ReleaseRefusal,
  type ReleaseResult,
  type TrialOptions,
  type TrialStart,
  type TrialStatus,
  type VerifiedAnswer,
  type UsageBalance,
  type UsageEventResult,
  type UsageReport,
} from './client.js';
export { licenceMeters, type LicenceMeter, type UsageEvent } from './usage.js';
export { LeaseKeeper, type LeaseOptions } from './lease.js';
export type { Arch, BlockedUpdate, Channel, Download, FeedUrls, Platform, Update, UpdateArtifact, UpdateCheck, UpdateOptions } from './updates.js';
export type { LicenceClaims, CalendarStatus, FingerprintParts, FingerprintComponent } from '@licensor/protocol';
