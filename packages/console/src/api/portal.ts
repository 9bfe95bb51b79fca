import { useQuery, useQueryClient } from '@tanstack/react-query';
import { key, useAction } from './action';
import { api, unwrap } from './client';

/** The customer portal (DESIGN.md 12): its own session, its own part of the cache. */
const portal = () => key('portal');
const lidPath = (lid: string) => ({ params: { path: { lid } } });

export const usePortalMe = () => useQuery({ queryKey: [...portal(), 'me'], queryFn: () => unwrap(api().GET('/portal/me')), retry: false });
export const usePortalLicences = (enabled: boolean) =>
  useQuery({ queryKey: [...portal(), 'licences'], queryFn: () => unwrap(api().GET('/portal/licenses')), enabled });
export const usePortalLicence = (lid: string) =>
  useQuery({ queryKey: [...portal(), 'licence', lid], queryFn: () => unwrap(api().GET('/portal/licenses/{lid}', lidPath(lid))) });

export const usePortalRelease = (lid: string) =>
  useAction((machineId: number) => unwrap(api().POST('/portal/licenses/{lid}/release', { ...lidPath(lid), body: { machineId } })), [portal()]);
export const usePortalDownload = (lid: string) =>
  useAction(async () => (await unwrap(api().GET('/portal/licenses/{lid}/download', { ...lidPath(lid), parseAs: 'text' }))) as string);
/** The licence's product's newest published releases, each covered or not, with their files (DESIGN.md 20). */
export const usePortalReleases = (lid: string) =>
  useQuery({ queryKey: [...portal(), 'licence', lid, 'releases'], queryFn: () => unwrap(api().GET('/portal/licenses/{lid}/releases', lidPath(lid))) });
/** A short-lived link to one covered file, which the browser then opens. */
export const usePortalFileLink = (lid: string) =>
  useAction((artifactId: number) => unwrap(api().POST('/portal/licenses/{lid}/downloads', { ...lidPath(lid), body: { artifactId } })));
export const usePortalResetLinks = (lid: string) =>
  useAction(() => unwrap(api().POST('/portal/licenses/{lid}/reset-download-links', lidPath(lid))), [portal()]);
export function usePortalAirGap(lid: string) {
  return {
    activate: useAction(
      (request: string) => unwrap(api().POST('/portal/licenses/{lid}/air-gap-activations', { ...lidPath(lid), body: { request } })),
      [portal()],
    ),
    deactivate: useAction(
      (code: string) => unwrap(api().POST('/portal/licenses/{lid}/air-gap-deactivations', { ...lidPath(lid), body: { code } })),
      [portal()],
    ),
  };
}
export function usePortalSignOut() {
  const queryClient = useQueryClient();
  return useAction(async () => {
    await api().POST('/portal/auth/logout');
    queryClient.removeQueries({ queryKey: portal() });
  }, [portal()]);
}
/** Opens the portal with a link's code (a POST: opening the link itself uses nothing up). */
export const useOpenPortal = (slug: string) => useAction((code: string) => unwrap(api(slug).POST('/portal/session', { body: { code } })));
