import { keepPreviousData, useQuery } from '@tanstack/react-query';
import { key, useAction } from './action';
import { api, unwrap, type Answer, type Body, type Query } from './client';
import type { paths } from './schema';

export type Licence = Answer<'/licenses/{lid}', 'get'>;
export type LicenceRow = Answer<'/licenses/page', 'get'>['items'][number];
export type Machine = Answer<'/licenses/{lid}/machines', 'get'>[number];
export type Verdict = Answer<'/licenses/verify', 'post'>;
export type PageQuery = Query<'listLicencePage'>;
/** The licence list's filter, as `/licenses/page` and `/licenses/export.csv` take it. */
export type Filter = Omit<PageQuery, 'limit' | 'offset' | 'cursor'>;
export type IssueBody = Body<'issueLicence'>;
export type RenewBody = Body<'renewLicence'>;
/** The JSON body `POST path` takes (for the operations without an operation id). */
type PostBody<P extends keyof paths> = paths[P] extends { post: { requestBody?: { content: { 'application/json': infer J } } } } ? J : never;
export type ExtendBody = PostBody<'/licenses/{lid}/extend-trial'>;
export type ConvertBody = PostBody<'/licenses/{lid}/convert'>;
export type Usage = Answer<'/licenses/{lid}/usage', 'get'>;
export type UsageEvent = Usage['events'][number];
export type AdjustBody = Body<'adjustLicenceUsage'>;
export type Email = Answer<'/licenses/{lid}/emails', 'get'>[number];

const licences = () => key('licences');
const one = (lid: string) => key('licences', 'one', lid);
/** What a licence's write changes: the licence, every list and tally of licences, the dashboard. */
const afterWrite = () => [licences(), key('dashboard')];
const lidPath = (lid: string) => ({ params: { path: { lid } } });

export const useLicence = (lid: string | null) =>
  useQuery({ queryKey: one(lid ?? ''), queryFn: () => unwrap(api().GET('/licenses/{lid}', lidPath(lid!))), enabled: lid !== null });
export const useMachines = (lid: string) =>
  useQuery({ queryKey: [...one(lid), 'machines'], queryFn: () => unwrap(api().GET('/licenses/{lid}/machines', lidPath(lid))) });
export const useVersions = (lid: string) =>
  useQuery({ queryKey: [...one(lid), 'versions'], queryFn: () => unwrap(api().GET('/licenses/{lid}/versions', lidPath(lid))) });
export const useLeasePeaks = (lid: string) =>
  useQuery({ queryKey: [...one(lid), 'lease-peaks'], queryFn: () => unwrap(api().GET('/licenses/{lid}/lease-peaks', lidPath(lid))) });
export function useLicenceActivity(lid: string, limit: number, offset: number) {
  return useQuery({
    queryKey: [...one(lid), 'activity', offset],
    queryFn: () => unwrap(api().GET('/licenses/{lid}/activity', { params: { path: { lid }, query: { limit, offset } } })),
    placeholderData: keepPreviousData,
  });
}

/** A licence's meters this period and its newest usage events (DESIGN.md 19). */
export const useUsage = (lid: string, enabled: boolean) =>
  useQuery({ queryKey: [...one(lid), 'usage'], queryFn: () => unwrap(api().GET('/licenses/{lid}/usage', lidPath(lid))), enabled });
/**
 * Credits or debits a meter this period. `idempotencyKey` is the dialog's: a second submit of
 * the same adjustment (a double click, a lost answer) is answered once, never counted twice.
 */
export const useAdjustUsage = (lid: string) =>
  useAction(
    ({ body, idempotencyKey }: { body: AdjustBody; idempotencyKey: string }) =>
      unwrap(api().POST('/licenses/{lid}/usage/adjust', { params: { path: { lid }, header: { 'idempotency-key': idempotencyKey } }, body })),
    afterWrite,
  );

/** A page of licences; the previous page stays in view while the next one comes. */
export function useLicencePage(query: PageQuery, enabled = true) {
  return useQuery({
    queryKey: [...licences(), 'page', query],
    queryFn: () => unwrap(api().GET('/licenses/page', { params: { query } })),
    placeholderData: keepPreviousData,
    enabled,
  });
}
export const useLicenceWindows = () => useQuery({ queryKey: [...licences(), 'windows'], queryFn: () => unwrap(api().GET('/licenses/windows')) });

/** Every lid the filter matches, page by page through the keyset cursor (the service pages, never the browser). */
export async function lidsMatching(filter: Filter): Promise<string[]> {
  const lids: string[] = [];
  let cursor: string | undefined;
  do {
    const page = await unwrap(api().GET('/licenses/page', { params: { query: { ...filter, limit: 500, ...(cursor ? { cursor } : {}) } } }));
    lids.push(...page.items.map((l) => l.lid));
    cursor = page.nextCursor ?? undefined;
  } while (cursor);
  return lids;
}

/** The CSV export of the filter, as a stream, with the file name the service gives it. */
export async function exportCsv(filter: Filter) {
  const call = api().GET('/licenses/export.csv', { params: { query: filter }, parseAs: 'stream' });
  const body = await unwrap(call);
  const { response } = await call;
  const name = /filename="([^"]+)"/.exec(response.headers.get('content-disposition') ?? '')?.[1] ?? 'licences.csv';
  return { stream: body as ReadableStream<Uint8Array>, name };
}

export const downloadTerm = (lid: string, versionNo: number) =>
  unwrap(api().GET('/licenses/{lid}/versions/{versionNo}', { params: { path: { lid, versionNo } } }));

export const useIssueLicence = () => useAction((body: IssueBody) => unwrap(api().POST('/licenses', { body })), afterWrite);

/** Revoke, reinstate, archive and restore: one licence's lifecycle (revoke and archive also in bulk). */
export const revokeLicence = (reason: string | null) => (lid: string) => unwrap(api().POST('/licenses/{lid}/revoke', { ...lidPath(lid), body: { reason } }));
export const archiveLicence = (lid: string) => unwrap(api().POST('/licenses/{lid}/archive', { ...lidPath(lid), body: {} }));
export const useRevoke = (lid: string) => useAction((reason: string | null) => revokeLicence(reason)(lid), afterWrite);
export const useReinstate = (lid: string) => useAction(() => unwrap(api().POST('/licenses/{lid}/reinstate', { ...lidPath(lid), body: {} })), afterWrite);
export const useArchive = (lid: string) => useAction(() => archiveLicence(lid), afterWrite);
export const useRestore = (lid: string) => useAction(() => unwrap(api().POST('/licenses/{lid}/restore', { ...lidPath(lid), body: {} })), afterWrite);
export const useRenew = (lid: string) => useAction((body: RenewBody) => unwrap(api().POST('/licenses/{lid}/renew', { ...lidPath(lid), body })), afterWrite);
/** Raises the licence's feed generation (DESIGN.md 20): every update feed URL made before stops working. */
export const useResetDownloadLinks = (lid: string) => useAction(() => unwrap(api().POST('/licenses/{lid}/reset-download-links', lidPath(lid))), afterWrite);
export const useSaveNotes = (lid: string) =>
  useAction((notes: string | null) => unwrap(api().PUT('/licenses/{lid}/notes', { ...lidPath(lid), body: { notes } })), afterWrite);
export const useReleaseMachine = (lid: string) =>
  useAction((machineId: number) => unwrap(api().POST('/licenses/{lid}/release-binding', { ...lidPath(lid), body: { machineId } })), afterWrite);

/** A trial's vendor actions (DESIGN.md 18): extend its term, convert it to a paid licence, free its machine's ledger entry. */
export const useTrialInstallations = (lid: string, enabled: boolean) =>
  useQuery({ queryKey: [...one(lid), 'trial-installations'], queryFn: () => unwrap(api().GET('/licenses/{lid}/trial-installations', lidPath(lid))), enabled });
export const useExtendTrial = (lid: string) =>
  useAction((body: ExtendBody) => unwrap(api().POST('/licenses/{lid}/extend-trial', { ...lidPath(lid), body })), afterWrite);
export const useConvertTrial = (lid: string) =>
  useAction((body: ConvertBody) => unwrap(api().POST('/licenses/{lid}/convert', { ...lidPath(lid), body })), afterWrite);
export const useResetTrialLedger = (lid: string) =>
  useAction(() => unwrap(api().POST('/licenses/{lid}/reset-trial-ledger', { ...lidPath(lid), body: {} })), afterWrite);

/** A licence's emails (DESIGN.md 22), asked again every few seconds while one waits in the outbox. */
export const useEmails = (lid: string) =>
  useQuery({
    queryKey: [...one(lid), 'emails'],
    queryFn: () => unwrap(api().GET('/licenses/{lid}/emails', lidPath(lid))),
    refetchInterval: (query) => (query.state.data?.some((e) => e.status === 'pending') ? 2_000 : false),
  });
export const useSendLicence = (lid: string) => useAction(() => unwrap(api().POST('/licenses/{lid}/send', lidPath(lid))), [one(lid)]);
export const useEraseLicence = (lid: string) => useAction(() => unwrap(api().POST('/licenses/{lid}/erase-personal-data', lidPath(lid))), afterWrite);

/** Several licences revoked or archived one request each (what a script would do), a few at a time. */
export const useBulk = () =>
  useAction(async ({ lids: which, each }: { lids: () => Promise<string[]>; each: (lid: string, of: number) => Promise<unknown> }) => {
    const lids = await which();
    const failures: Array<{ lid: string; message: string }> = [];
    const queue = [...lids];
    // A few at a time: quick for hundreds, gentle on the service for thousands.
    const worker = async () => {
      for (let lid = queue.shift(); lid !== undefined; lid = queue.shift()) {
        try {
          await each(lid, lids.length);
        } catch (e) {
          failures.push({ lid, message: e instanceof Error ? e.message : String(e) });
        }
      }
    };
    await Promise.all([worker(), worker(), worker(), worker()]);
    return { attempted: lids.length, failures };
  }, afterWrite);

/** Air-gapped activation on the licence page (DESIGN.md 14). */
export function useAirGap(lid: string) {
  return {
    activate: useAction((request: string) => unwrap(api().POST('/licenses/{lid}/air-gap-activations', { ...lidPath(lid), body: { request } })), afterWrite),
    deactivate: useAction((code: string) => unwrap(api().POST('/licenses/{lid}/air-gap-deactivations', { ...lidPath(lid), body: { code } })), afterWrite),
  };
}

/** A pasted licence string judged as an application would. */
export const useVerify = () => useAction((license: string) => unwrap(api().POST('/licenses/verify', { body: { license } })));
