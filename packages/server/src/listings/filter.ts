import { badRequest } from '../core/errors.js';
import type { Search } from './repos/search.js';
import type { LicenceStatus } from './status.js';

export const WINDOWS = ['all', '7d', '30d', '90d', 'grace', 'expired', 'perpetual', 'archived'] as const;
export const SORTS = ['issuedAt', 'expiresAt', 'licensee', 'status', 'product', 'lastCheckedAt'] as const;
export const STATUSES = ['PENDING', 'ACTIVE', 'GRACE', 'EXPIRED', 'REVOKED'] as const;
export type Window = (typeof WINDOWS)[number];
export type SortKey = (typeof SORTS)[number];

export interface ListingFilter {
  /** `q`, with how it is searched (repos/search.ts). */
  search?: Search | undefined;
  status?: LicenceStatus[] | undefined;
  window: Window;
  productId?: number | undefined;
  customerId?: number | undefined;
  /** DESIGN.md 18: trials only (true) or none (false). */
  trial?: boolean | undefined;
  sort: SortKey;
  asc: boolean;
}

/** A row's place in a sorted listing: its sort key and lid (the keyset cursor's content). */
export interface Position {
  key: string | number | null;
  lid: string;
}

/** `status=ACTIVE,GRACE` or `status=ACTIVE&status=GRACE`: one value, a comma list, or repeated. */
export function parseStatuses(given: string[] | undefined): LicenceStatus[] | undefined {
  if (given === undefined) return undefined;
  const values = given.flatMap((text) => text.split(',')).map((s) => s.trim());
  const unknown = values.find((v) => !(STATUSES as readonly string[]).includes(v));
  if (unknown !== undefined) throw badRequest(`Query parameter "status": "${unknown}" is not one of ${STATUSES.join(', ')}`);
  return values as LicenceStatus[];
}
