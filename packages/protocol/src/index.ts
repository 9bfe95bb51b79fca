export { MalformedError } from './errors.js';
export { b64uEncode, b64uDecode, isCanonicalB64u } from './encoding.js';
export {
  ALGORITHMS,
  ALGORITHM_INFO,
  isAlgorithm,
  algorithmOfKey,
  generateAlgorithmKeyPair,
  type Algorithm,
  type AlgorithmInfo,
  type KeyGenerationParams,
  type SignatureAlgorithmName,
} from './algorithms.js';
export { signBytes, verifyBytes } from './signing.js';
export {
  CLAIM_NAMES,
  FLOATING_CLAIM_NAMES,
  LEASE_SECONDS_RANGE,
  BORROW_SECONDS_MAX,
  isReservedClaimName,
  orderClaims,
  licencePayload,
  signLicence,
  signLicenceWith,
  parseLicence,
  verifyLicence,
  readLicence,
  licenceParams,
  type ClaimName,
  type ClaimsInput,
  type IssuerClaims,
  type LicenceClaims,
  type LicenceType,
  type Activation,
  type ParamValue,
  type ParsedLicence,
  type LicenceReading,
} from './licence-string.js';
export {
  FINGERPRINT_COMPONENTS,
  MISSING_COMPONENT,
  FingerprintError,
  hashComponent,
  buildFingerprint,
  fingerprintFromParts,
  parseFingerprint,
  fingerprintsMatch,
  matchScore,
  fpDigest,
  type FingerprintComponent,
  type FingerprintParts,
  type FingerprintProblem,
  type RawComponents,
} from './fingerprint.js';
export {
  receiptMessage,
  receiptTagOf,
  signReceipt,
  verifyReceipt,
  receiptGrantsLicence,
  type ReceiptFields,
  type ReceiptTag,
} from './receipt.js';
export { graceEndsAt, calendarStatus, type CalendarStatus } from './status.js';
