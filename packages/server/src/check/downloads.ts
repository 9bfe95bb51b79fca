import { downloadLicence, downloadRefused, feedTokenAnswer, grantAnswer, licenceRefusal, type DownloadDeps } from '../downloads/service.js';
import { heldLease } from './own-seat.js';
import { findTerm, readDownloader, seatOf, type CheckScope } from './service.js';

interface DownloaderBody {
  license: string;
  fingerprint?: string | undefined;
}

/**
 * DESIGN.md 20's "Who may download", after the check's refusals that the gate gave: the licence
 * read as a check reads it (OFFLINE accepted), then 403 UNKNOWN_LICENCE, REVOKED, NOT_YET_VALID,
 * EXPIRED (a trial past its end) and NO_SEAT (ONLINE and HYBRID: this machine's live seat as a
 * check matches it, a floating licence's live lease). Never binds: a machine checks first.
 */
async function mayDownload(scope: CheckScope, body: DownloaderBody) {
  const presented = readDownloader(scope, body);
  const term = await findTerm(scope, presented);
  if (!term) throw downloadRefused('UNKNOWN_LICENCE');
  const licence = await downloadLicence(scope.tenant, term.licence.lid);
  if (!licence) throw downloadRefused('UNKNOWN_LICENCE');
  const refusal = licenceRefusal(licence, scope.now);
  if (refusal) throw downloadRefused(refusal);
  if (presented.claims.typ === 'OFFLINE') return { licence, bindingId: null };
  const seat = term.licence.floating
    ? heldLease(term)
    : seatOf(term.bindings, { parts: presented.parts! }, presented.claims.fpn ?? scope.product.fingerprintNeed);
  if (!seat) throw downloadRefused('NO_SEAT');
  return { licence, bindingId: Number(seat.id) };
}

/** The check API's two download routes' work: a grant for one artifact, and a feed token. */
export function downloadWork(deps: DownloadDeps) {
  return {
    grant: async (scope: CheckScope, body: DownloaderBody & { artifactId: number }) => {
      const { licence } = await mayDownload(scope, body);
      return grantAnswer(deps, scope.tenant, scope.org, scope.product.id, licence, body.artifactId, scope.now);
    },
    feedToken: async (scope: CheckScope, body: DownloaderBody) => {
      const { licence, bindingId } = await mayDownload(scope, body);
      return feedTokenAnswer(deps, scope.org, licence, bindingId);
    },
  };
}
