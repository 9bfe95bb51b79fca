import type { Generated } from 'kysely';

/*
 * One representation on both dialects: times are epoch milliseconds (int8), flags are
 * integers 0/1 and structured values are JSON text. Both drivers then return the same
 * JavaScript values, so no repository converts per dialect (see docs/decisions.md).
 */

export interface OrganisationsTable {
  id: Generated<number>;
  slug: string;
  name: string;
  plan_limit: number | null;
  timezone: string;
  settings_updated_at: number | null;
  settings_updated_by: string | null;
  created_at: number;
  suspended: Generated<number>;
  /** DESIGN.md 18: how many non-archived ACTIVE trials the organisation may hold; null = no limit. */
  trial_limit: number | null;
  /** DESIGN.md 22: the control plane's switch; 0 refuses sends and holds pending emails. */
  mail_enabled: Generated<number>;
}

/** DESIGN.md 8: the people who run the deployment, outside every organisation. */
export interface PlatformAccountsTable {
  id: Generated<number>;
  username: string;
  display_name: string;
  role: string;
  active: number;
  password_hash: string;
  created_at: number;
  last_login_at: number | null;
}

export interface PlatformSessionsTable {
  /** SHA-256 (hex) of the cookie secret. */
  id: string;
  account_id: number;
  created_at: number;
  last_seen_at: number;
  expires_at: number;
}

export interface PlatformLoginFailuresTable {
  id: Generated<number>;
  username: string;
  address: string;
  at: number;
}

export interface PlatformAuditTable {
  id: Generated<number>;
  at: number;
  actor: string;
  action: string;
  /** The organisation's slug, when the entry concerns one. */
  organisation: string | null;
  details: string | null;
}

export interface UsersTable {
  id: Generated<number>;
  org_id: number;
  username: string;
  display_name: string;
  email: string | null;
  role: string;
  active: number;
  password_hash: string | null;
  created_at: number;
  created_by: string | null;
  last_login_at: number | null;
  /** DESIGN.md 21: the IdP's `sub` this member is linked to (unique per organisation). */
  sso_sub: string | null;
  sso_linked_at: number | null;
  sso_signed_in_at: number | null;
}

export interface SessionsTable {
  /** SHA-256 (hex) of the cookie secret; the secret itself is never stored. */
  id: string;
  org_id: number;
  user_id: number;
  created_at: number;
  last_seen_at: number;
  expires_at: number;
  /** `password`, `passkey` or `sso` (DESIGN.md 21: enforcement judges it when the session is read). */
  method: Generated<string>;
  /** An SSO session's sign-in time and the hard end 12 hours after it. */
  sso_at: number | null;
  hard_end: number | null;
}

export interface ApiTokensTable {
  id: string;
  org_id: number;
  name: string;
  scopes: string;
  secret_hash: string;
  created_at: number;
  created_by: string;
  expires_at: number | null;
  last_used_at: number | null;
  revoked_at: number | null;
}

export interface LoginFailuresTable {
  id: Generated<number>;
  org_id: number;
  username: string;
  address: string;
  at: number;
}

export interface AuditEntriesTable {
  id: Generated<number>;
  org_id: number;
  at: number;
  actor: string;
  action: string;
  subject_type: string;
  subject_id: string | null;
  lid: string | null;
  summary: string;
  details: string | null;
}

export interface ProductsTable {
  id: Generated<number>;
  org_id: number;
  product_key: string;
  name: string;
  description: string | null;
  active: number;
  /** The current key's algorithm. */
  algorithm: string;
  key_origin: string;
  certificate_type: string;
  licence_type: string;
  allowed_licence_types: string;
  check_id: string;
  /** SHA-256 (hex) of the check token's secret; null until the first rotation. */
  check_token_hash: string | null;
  check_rotated_at: number | null;
  licence_fetch_enabled: number;
  check_interval_seconds: number;
  max_offline_seconds: number;
  fingerprint_need: number;
  max_machines: number;
  default_validity_months: number | null;
  default_grace_days: number;
  /** DESIGN.md 12: seats one licence may release by itself in any 30 days; null = no limit. */
  self_release_limit: number | null;
  /** DESIGN.md 13: NODE_LOCKED or FLOATING; the lease length and borrowing limits of FLOATING licences. */
  seat_model: string;
  lease_seconds: number;
  max_borrow_seconds: number;
  max_borrowed_seats: number;
  /** DESIGN.md 14: whether licences of the product may be activated on air-gapped machines, and for how many days. */
  air_gap_activation: number;
  air_gap_activation_days: number;
  /** DESIGN.md 18: the trial policy (trial_days 0 = off); params and meters as JSON objects. */
  trial_days: Generated<number>;
  trial_params: Generated<string>;
  trial_meters: Generated<string>;
  trial_daily_limit: number | null;
  trial_address_daily_limit: number | null;
  /** The lowest `fpn` of the product's ledger entries (null: none yet): how many components a lookup reads. */
  trial_need: number | null;
  /** HMAC-SHA256(ledger key, `check`), hex: what `restore --check` tries the master key on. */
  trial_check: string | null;
  params: string;
  /** DESIGN.md 19: the product's meters, a JSON array of {key, label, limit, period, overage}. */
  meters: Generated<string>;
  created_at: number;
  created_by: string | null;
  updated_at: number;
  /** Rises with every change, so any instance can tell a cached view of the product is stale. */
  version: number;
  /** DESIGN.md 20: the default maintenance window in months (0 to 1,200); null = none. */
  updates_months: number | null;
}

export interface ProductKeysTable {
  id: Generated<number>;
  org_id: number;
  product_id: number;
  algorithm: string;
  public_key_pem: string;
  /** The PKCS#8 private key, or for a key on a PKCS#11 token its PIN, sealed under the master key (keys/sealing.ts). */
  sealed_private_key: string;
  /** A key on a PKCS#11 token: the token's label, the key's CKA_LABEL and CKA_ID (hex); all null otherwise. */
  pkcs11_token: string | null;
  pkcs11_label: string | null;
  pkcs11_id: string | null;
  key_fingerprint: string;
  certificate_pem: string | null;
  certificate_subject: string | null;
  certificate_expires_at: number | null;
  created_at: number;
  /** Null for the product's current key; retired keys are kept to verify what they signed. */
  retired_at: number | null;
}

export interface CustomersTable {
  id: Generated<number>;
  org_id: number;
  name: string;
  email: string | null;
  /** Lower-cased email, unique per organisation, so uniqueness is case-insensitive on both dialects. */
  email_lower: string | null;
  notes: string | null;
  created_at: number;
  created_by: string | null;
}

export interface LicencesTable {
  id: Generated<number>;
  org_id: number;
  lid: string;
  product_id: number;
  customer_id: number | null;
  licensee: string;
  licensee_email: string | null;
  licence_type: string;
  activation: string | null;
  issued_at: number;
  starts_at: number | null;
  expires_at: number | null;
  grace_days: number;
  grace_ends_at: number | null;
  max_machines: number;
  check_every_seconds: number | null;
  check_max_seconds: number | null;
  params: string;
  licence_string: string;
  key_id: number;
  term_version: number;
  revoked: number;
  revoked_at: number | null;
  revoked_reason: string | null;
  archived: number;
  archived_at: number | null;
  issued_by: string;
  renewed_at: number | null;
  rebind_count: number;
  notes: string | null;
  search_text: string;
  /** The status (as its rank in STATUSES) at the tally clock's instant: listings/repos/tallies.ts. */
  status_rank: number | null;
  /** The product's seat model when the licence was issued, kept for good (DESIGN.md 13); NODE_LOCKED by default. */
  seat_model: Generated<string>;
  /** DESIGN.md 19: the licence's meters, copied from its product at issue and renewal, a JSON array of {key, label, period, limit, overage}. */
  meters: Generated<string>;
  /** DESIGN.md 18: 1 for a trial, made by the service on a machine's request. */
  trial: Generated<number>;
  trial_started_at: number | null;
  trial_converted_to: string | null;
  trial_converted_at: number | null;
  trial_ledger_reset_at: number | null;
  /** Distinct device keys the trial was answered to (at most 100). */
  trial_installations: Generated<number>;
  converted_from_trial: string | null;
  /** DESIGN.md 20: the licence's maintenance window in months; null = none. */
  updates_months: number | null;
  /** DESIGN.md 20: the current term's `upd`, else its grace end, else null (every release), in Unix seconds as `upd` is signed: what "covered" compares with. */
  updates_until: number | null;
  /** Raised by reset-download-links: feed tokens of an older generation stop working. */
  feed_generation: Generated<number>;
}

/** DESIGN.md 18: one ledger entry per trial: keyed hashes only (trials/ledger.ts). */
export interface TrialEntriesTable {
  id: Generated<number>;
  org_id: number;
  product_id: number;
  licence_id: number;
  fpn: number;
  machine: string | null;
  host: string | null;
  mac: string | null;
  cpu: string | null;
  disk: string | null;
  addr: string;
  addr48: string | null;
  started_at: number;
  reset_at: number | null;
}

export interface TrialInstallationsTable {
  licence_id: number;
  org_id: number;
  device_public_key: string;
  first_seen_at: number;
}

/** A licence's lastCheckedAt, apart from the licence row so that a stamp is a small write (0016). */
export interface LicenceStampsTable {
  licence_id: number;
  org_id: number;
  archived: number;
  lid: string;
  last_checked_at: number | null;
}

export interface CheckCountsTable {
  org_id: number;
  bucket: number;
  count: number;
}

/** How many licences had each key at the clock's `as_of` (listings/repos/tallies.ts). */
export interface LicenceTalliesTable {
  org_id: number;
  archived: number;
  product_id: number;
  licence_type: string;
  perpetual: number;
  status: string;
  n: number;
}

export interface LicenceTallyClocksTable {
  org_id: number;
  as_of: number;
}

export interface LicenceVersionsTable {
  id: Generated<number>;
  org_id: number;
  licence_id: number;
  version_no: number;
  issued_at: number;
  starts_at: number | null;
  expires_at: number | null;
  grace_days: number;
  issued_by: string;
  revoked_reason: string | null;
  licence_string: string;
  key_id: number;
  superseded_at: number;
}

export interface MachineBindingsTable {
  id: Generated<number>;
  org_id: number;
  licence_id: number;
  fingerprint: string;
  parts: string;
  bound_at: number;
  released_at: number | null;
  released_by: string | null;
  at_issue: number;
  /** What the application calls this machine (DESIGN.md 5), when it sends one. */
  label: string | null;
  /** The last valid check from this seat, stamped at most once a minute. */
  last_seen_at: number | null;
  /** fpDigest of `fingerprint`: how a floating licence's check finds this machine's lease row. */
  fp_digest: string | null;
  /** A floating licence's lease, or an air-gapped activation's `until`: live until then (null: live until released). */
  lease_ends_at: number | null;
  /** The end of a borrow (DESIGN.md 13): until then only an operator may release it. */
  borrowed_until: number | null;
}

/** A floating licence's highest number of live leases seen on one UTC day. */
export interface LicenceLeasePeaksTable {
  org_id: number;
  licence_id: number;
  day: string;
  peak: number;
}

/** DESIGN.md 14: one air-gapped activation; its id is the response's `aid`. */
export interface AirGapActivationsTable {
  id: Generated<number>;
  org_id: number;
  licence_id: number;
  binding_id: number;
  /** The request text as received (whitespace removed). */
  request: string;
  nonce: string;
  dpk: string;
  fingerprint: string;
  /** The response's signed fields: status, the service's iat (ms), boundAt (ms), until (ms). */
  status: string;
  issued_at: number;
  bound_at: number;
  until: number;
  /** The signed response, stored after the commit that made the activation. */
  response: string | null;
  created_by: string;
  /** Set when a deactivation (or a newer activation from the same device key on the seat) ended it. */
  ended_at: number | null;
  ended_by: string | null;
  /** For a deactivation: whether it released the seat, and whether that counted towards selfReleaseLimit. */
  released: number | null;
  counted: number;
}

export interface IdempotencyKeysTable {
  id: Generated<number>;
  org_id: number;
  key: string;
  request_hash: string;
  status_code: number;
  body: string;
  created_at: number;
}

/** DESIGN.md 12: a single-use link a customer opens the portal with; only the code's hash is kept. */
export interface PortalLinksTable {
  id: Generated<number>;
  org_id: number;
  customer_id: number;
  code_hash: string;
  created_at: number;
  created_by: string;
  expires_at: number;
  used_at: number | null;
  revoked_at: number | null;
}

export interface PortalSessionsTable {
  /** SHA-256 (hex) of the `svc_portal` cookie. */
  id: string;
  org_id: number;
  customer_id: number;
  link_id: number;
  created_at: number;
  expires_at: number;
}

/** DESIGN.md 9: a passkey's stored fields, for a member or a platform account. */
interface PasskeyColumns {
  id: Generated<number>;
  /** Base64url, as the authenticator gave it. */
  credential_id: string;
  /** The COSE public key, base64url. */
  public_key: string;
  counter: number;
  /** JSON array of transport hints. */
  transports: string;
  name: string;
  created_at: number;
  last_used_at: number | null;
}

export interface PasskeysTable extends PasskeyColumns {
  org_id: number;
  user_id: number;
}

export interface PlatformPasskeysTable extends PasskeyColumns {
  account_id: number;
}

export interface WebauthnChallengesTable {
  challenge: string;
  /** `org:<id>` or `platform`: a challenge finishes only where it began. */
  realm: string;
  purpose: string;
  /** The member or account registering; null for a sign-in. */
  subject: number | null;
  expires_at: number;
}

export interface Schema {
  organisations: OrganisationsTable;
  users: UsersTable;
  sessions: SessionsTable;
  api_tokens: ApiTokensTable;
  login_failures: LoginFailuresTable;
  audit_entries: AuditEntriesTable;
  products: ProductsTable;
  product_keys: ProductKeysTable;
  customers: CustomersTable;
  licences: LicencesTable;
  licence_versions: LicenceVersionsTable;
  machine_bindings: MachineBindingsTable;
  licence_lease_peaks: LicenceLeasePeaksTable;
  air_gap_activations: AirGapActivationsTable;
  idempotency_keys: IdempotencyKeysTable;
  check_counts: CheckCountsTable;
  licence_tallies: LicenceTalliesTable;
  licence_stamps: LicenceStampsTable;
  licence_tally_clocks: LicenceTallyClocksTable;
  platform_accounts: PlatformAccountsTable;
  platform_sessions: PlatformSessionsTable;
  platform_login_failures: PlatformLoginFailuresTable;
  platform_audit: PlatformAuditTable;
  portal_links: PortalLinksTable;
  portal_sessions: PortalSessionsTable;
  passkeys: PasskeysTable;
  platform_passkeys: PlatformPasskeysTable;
  webauthn_challenges: WebauthnChallengesTable;
  webhook_endpoints: WebhookEndpointsTable;
  webhook_state: WebhookStateTable;
  webhook_events: WebhookEventsTable;
  webhook_deliveries: WebhookDeliveriesTable;
  webhook_attempts: WebhookAttemptsTable;
  webhook_term_marks: WebhookTermMarksTable;
  usage_counts: UsageCountsTable;
  usage_events: UsageEventsTable;
  usage_marks: UsageMarksTable;
  trial_entries: TrialEntriesTable;
  trial_installations: TrialInstallationsTable;
  sso_configs: SsoConfigsTable;
  sso_states: SsoStatesTable;
  releases: ReleasesTable;
  artifacts: ArtifactsTable;
  artifact_downloads: ArtifactDownloadsTable;
  emails: EmailsTable;
  mail_settings: MailSettingsTable;
  integrations: IntegrationsTable;
  integration_events: IntegrationEventsTable;
  integration_links: IntegrationLinksTable;
  integration_lines: IntegrationLinesTable;
  integration_payments: IntegrationPaymentsTable;
  integration_revocations: IntegrationRevocationsTable;
  paddle_customers: PaddleCustomersTable;
}

/** DESIGN.md 20: a release of a product (DRAFT, PUBLISHED or YANKED). */
export interface ReleasesTable {
  id: Generated<number>;
  org_id: number;
  product_id: number;
  version: string;
  channel: string;
  status: string;
  notes: string;
  /** JSON object of product parameter keys to values. */
  requires: string;
  bundle_version: string | null;
  created_at: number;
  created_by: string;
  published_at: number | null;
  published_by: string | null;
  yanked_at: number | null;
  yanked_reason: string | null;
  /** The SVCM1 manifest text, set at publish. */
  manifest: string | null;
  /** JSON array of {keyFingerprint, signature}, current key first. */
  manifest_signatures: string | null;
  row_version: Generated<number>;
}

/** DESIGN.md 20: a file of a release; its bytes are in the artifact store under storage_key. */
export interface ArtifactsTable {
  id: Generated<number>;
  org_id: number;
  product_id: number;
  release_id: number;
  filename: string;
  platform: string;
  arch: string;
  size: number;
  sha256: string;
  sha512: string;
  content_type: string;
  tauri_signature: string | null;
  ed_signature: string | null;
  backend: string;
  storage_key: string;
  created_at: number;
  created_by: string;
}

/** Downloads of an artifact on one local date (YYYY-MM-DD) of the organisation. */
export interface ArtifactDownloadsTable {
  org_id: number;
  artifact_id: number;
  day: string;
  count: number;
}

/** DESIGN.md 19 (usage/): a meter's count in one period of a licence. */
export interface UsageCountsTable {
  org_id: number;
  licence_id: number;
  meter: string;
  period_key: string;
  used: number;
  /** The ids of this meter and key remembered (DESIGN.md 19's EVENT_LIMIT): written with the events, lowered as they are pruned. */
  ids: Generated<number>;
}

/** A recorded usage event (ACCEPTED or LIMIT_REACHED) or an operator's adjustment (event_id null). */
export interface UsageEventsTable {
  id: Generated<number>;
  org_id: number;
  licence_id: number;
  event_id: string | null;
  meter: string;
  amount: number;
  at: number | null;
  received_at: number;
  result: string;
  period_key: string;
  source: string;
  machine_id: number | null;
  actor: string;
  reason: string | null;
  /** When the id may be forgotten: 35 days past its period's end, 400 days after recording for NONE. */
  expires_at: number;
}

/** usage.threshold raised once per licence, meter, period key, limit and threshold. */
export interface UsageMarksTable {
  org_id: number;
  licence_id: number;
  meter: string;
  period_key: string;
  limit_value: number;
  threshold: number;
  marked_at: number;
}

/** DESIGN.md 15 (webhooks/). */
export interface WebhookEndpointsTable {
  id: Generated<number>;
  org_id: number;
  url: string;
  description: string | null;
  /** A JSON array of event types, or ["*"]. */
  events: string;
  /** With `*`: the JSON array of the event types it stood for when saved (DESIGN.md 15); null for a list. */
  covers: string | null;
  enabled: number;
  disabled_reason: string | null;
  /** Sealed (keys/sealing.ts) like a private key; so is the previous one during a rotation's overlap. */
  secret: string;
  previous_secret: string | null;
  previous_until: number | null;
  created_at: number;
  created_by: string;
  updated_at: number;
  last_delivery_at: number | null;
  last_status: number | null;
  /** The first failed attempt since the last delivered one. */
  failing_since: number | null;
}

export interface WebhookStateTable {
  id: Generated<number>;
  org_id: number;
  last_sequence: number;
  /** Since when the organisation has had an endpoint without a break (licence.expiring). */
  since: number;
}

export interface WebhookEventsTable {
  id: Generated<number>;
  org_id: number;
  event_id: string;
  type: string;
  data: string;
  created_at: number;
  /** Both set together by the delivery loop, before the first attempt. */
  sequence: number | null;
  body: string | null;
}

export interface WebhookDeliveriesTable {
  id: Generated<number>;
  org_id: number;
  endpoint_id: number;
  event_id: number;
  status: 'pending' | 'delivered' | 'failed';
  attempts: number;
  next_at: number | null;
  /** The claim of the process making the attempt (webhooks/delivery.ts). */
  lease: string | null;
  created_at: number;
  updated_at: number;
}

export interface WebhookAttemptsTable {
  id: Generated<number>;
  org_id: number;
  delivery_id: number;
  at: number;
  http_status: number | null;
  duration_ms: number;
  response: string;
  error: string | null;
}

export interface WebhookTermMarksTable {
  id: Generated<number>;
  org_id: number;
  licence_id: number;
  kind: 'expiring' | 'expired';
  term_version: number;
}

/** DESIGN.md 21: an organisation's OIDC configuration; lists are JSON text. */
export interface SsoConfigsTable {
  id: Generated<number>;
  org_id: number;
  enabled: number;
  display_name: string;
  /** Without a trailing `/`. */
  issuer: string;
  client_id: string;
  /** Sealed like a private key (keys/sealing.ts), never shown. */
  client_secret: string;
  client_secret_updated_at: number;
  scopes: string;
  allowed_domains: string;
  role_claim: string | null;
  /** JSON `[{value, role}]`. */
  role_rules: string;
  default_role: string | null;
  jit_provisioning: number;
  enforce: number;
  /** JSON array of member ids. */
  break_glass: string;
  verified_at: number | null;
  /** JSON of the last callback past STATE_INVALID. */
  last_attempt: string | null;
  /** Moves on at every change: the per-instance discovery cache is keyed by it. */
  version: number;
  created_at: number;
  updated_at: number;
  updated_by: string;
}

/** A pending SSO sign-in (or link): single use, ten minutes. */
export interface SsoStatesTable {
  id: Generated<number>;
  org_id: number;
  /** SHA-256 (hex) of `state`. */
  state_hash: string;
  nonce: string;
  code_verifier: string;
  return_to: string;
  /** SHA-256 (hex) of the `svc_sso` cookie. */
  binding: string;
  /** The member a link started by (`/auth/sso/link`); null for a sign-in. */
  link_user_id: number | null;
  expires_at: number;
}

/** DESIGN.md 22: one licence email of the outbox (mail/). */
export interface EmailsTable {
  id: Generated<number>;
  org_id: number;
  licence_id: number;
  /** The customer's address as queued; null once erased. */
  to_address: string | null;
  trigger: 'manual' | 'issued' | 'renewed';
  status: 'pending' | 'sent' | 'failed';
  attempts: number;
  last_error: string | null;
  /** When the next attempt is due; null while held by the daily limit (or when no longer pending). */
  next_attempt_at: number | null;
  /** The claim of the process making the attempt, until `lease_until`. */
  lease: string | null;
  lease_until: number | null;
  /** When it was counted against the daily limit; null while held. */
  admitted_at: number | null;
  created_at: number;
  created_by: string;
  sent_at: number | null;
  term_issued_at: number | null;
  portal_link_id: number | null;
}

/** DESIGN.md 22: an organisation's email template; a null field is the default. */
export interface MailSettingsTable {
  id: Generated<number>;
  org_id: number;
  sender_name: string | null;
  reply_to: string | null;
  subject: string | null;
  text_body: string | null;
  html_body: string | null;
  updated_at: number;
  updated_by: string;
}

/** DESIGN.md 22: a connection to a payment provider. */
export interface IntegrationsTable {
  id: Generated<number>;
  org_id: number;
  name: string;
  provider: 'stripe' | 'paddle';
  /** The provider's endpoint secret, sealed (keys/sealing.ts) like a private key. */
  secret: string;
  enabled: number;
  send_on_issue: number;
  send_on_renew: number;
  /** A JSON array of mappings, as saved. */
  mappings: string;
  created_at: number;
  created_by: string;
  updated_at: number;
  last_event_at: number | null;
  last_failure_at: number | null;
  last_failure: string | null;
  /** The UTC clock hour (ms since the epoch / 3,600,000) of the last FAILED event audited: later ones of that hour are only counted. */
  failed_hour: number | null;
}

/** DESIGN.md 22: one event a connection received, once per event id, with its outcome. */
export interface IntegrationEventsTable {
  id: Generated<number>;
  org_id: number;
  integration_id: number;
  event_id: string;
  type: string;
  outcome: string;
  error: string | null;
  /** A JSON array of the lids the event changed, in line order. */
  lids: string;
  deliveries: number;
  last_delivery_at: number | null;
  received_at: number;
  /** While FAILED: the order as read (lines, periods, email, name: what a retry needs), never the raw body; else null. */
  retry_order: string | null;
}

/** DESIGN.md 22: a licence issued through a connection, with the provider's ids it belongs to. */
export interface IntegrationLinksTable {
  id: Generated<number>;
  org_id: number;
  integration_id: number;
  licence_id: number;
  customer_ref: string | null;
  subscription_ref: string | null;
  price_ref: string;
  order_ref: string | null;
  payment_ref: string | null;
  /** The last period end applied (ms): a renewal whose period end is not after it changes nothing. */
  period_end: number | null;
  created_at: number;
}

/** DESIGN.md 22: an order line applied, once whichever events name it, and what it did. */
export interface IntegrationLinesTable {
  id: Generated<number>;
  org_id: number;
  integration_id: number;
  line_ref: string;
  /** The event that applied it: that event's repeats answer what it did. */
  event_id: string;
  licence_id: number;
  outcome: string;
  /** The order (invoice or Checkout session) and payment the line was paid by: a refund or dispute finds its licences by them. */
  order_ref: string | null;
  payment_ref: string | null;
  applied_at: number;
}

/** DESIGN.md 22: a Stripe payment and the invoice it paid (invoice_payment.paid). */
export interface IntegrationPaymentsTable {
  id: Generated<number>;
  org_id: number;
  integration_id: number;
  payment_ref: string;
  order_ref: string;
}

/** DESIGN.md 22: a licence an event revoked; a dispute's or a pause's (`cause`) is reinstated by its end while untouched since. */
export interface IntegrationRevocationsTable {
  id: Generated<number>;
  org_id: number;
  integration_id: number;
  licence_id: number;
  event_id: string;
  cause: string | null;
  revoked_at: number;
  /** The event that reinstated it. */
  reinstated_by: string | null;
}

/** DESIGN.md 22: the latest email and name a Paddle connection saw for a customer id. */
export interface PaddleCustomersTable {
  id: Generated<number>;
  org_id: number;
  integration_id: number;
  customer_ref: string;
  email: string | null;
  name: string | null;
  occurred_at: number;
}
