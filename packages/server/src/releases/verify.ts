import { notFound } from '../core/errors.js';
import type { Database } from '../db/database.js';
import { tenant } from '../db/tenant.js';
import { findOrganisationBySlug, listOrganisations } from '../orgs/repo.js';
import { everyArtifactRow } from './repo.js';
import type { ArtifactStores } from './stores.js';

export interface ArtifactProblem {
  id: number;
  releaseId: number;
  filename: string;
}

export interface Verification {
  checked: number;
  missing: ArtifactProblem[];
  mismatched: ArtifactProblem[];
}

/**
 * `licensor artifacts verify [--org S]` (DESIGN.md 20): re-hashes every artifact (of one
 * organisation, by slug) in the store its row names, against the size and digests recorded at
 * upload. A store that cannot be reached fails the whole run: its bytes are not known to be missing.
 */
export async function verifyArtifacts(database: Database, stores: ArtifactStores, slug?: string): Promise<Verification> {
  let organisations = await listOrganisations(database.db);
  if (slug !== undefined) {
    const org = await findOrganisationBySlug(database.db, slug);
    if (!org) throw notFound(`no organisation "${slug}"`);
    organisations = [org];
  }
  const result: Verification = { checked: 0, missing: [], mismatched: [] };
  for (const org of organisations) {
    for (const row of await everyArtifactRow(tenant(database.db, org.id))) {
      const found = await stores.of(row.backend).hash(row.storage_key);
      const problem = { id: Number(row.id), releaseId: Number(row.release_id), filename: row.filename };
      result.checked += 1;
      if (found === null) result.missing.push(problem);
      else if (found.size !== Number(row.size) || found.sha256 !== row.sha256 || found.sha512 !== row.sha512) result.mismatched.push(problem);
    }
  }
  return result;
}
