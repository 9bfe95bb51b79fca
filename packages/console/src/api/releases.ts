import { useQuery } from '@tanstack/react-query';
import { useState } from 'react';
import { key, useAction } from './action';
import { ApiError, api, currentSlug, unwrap, type Answer, type Body } from './client';

export type Release = Answer<'/releases/{id}', 'get'>;
export type Artifact = Release['artifacts'][number];
export type NewReleaseBody = Body<'createRelease'>;
export type ReleaseChanges = Body<'updateRelease'>;
export type Platform = Artifact['platform'];
export type Arch = Artifact['arch'];

const releases = () => key('releases');
const idPath = (id: number) => ({ params: { path: { id } } });
/** A release's write changes it, its product's list, and the product (which counts its releases). */
const afterWrite = () => [releases(), key('products')];

export const useReleases = (productId: number) =>
  useQuery({ queryKey: [...releases(), 'of', productId], queryFn: () => unwrap(api().GET('/products/{id}/releases', idPath(productId))) });
export const useRelease = (id: number) => useQuery({ queryKey: [...releases(), 'one', id], queryFn: () => unwrap(api().GET('/releases/{id}', idPath(id))) });

export const useCreateRelease = (productId: number) =>
  useAction((body: NewReleaseBody) => unwrap(api().POST('/products/{id}/releases', { ...idPath(productId), body })), afterWrite);
export const useSaveRelease = (id: number) => useAction((body: ReleaseChanges) => unwrap(api().PUT('/releases/{id}', { ...idPath(id), body })), afterWrite);
export const useDeleteRelease = (id: number) => useAction(() => unwrap(api().DELETE('/releases/{id}', idPath(id))), afterWrite);
/** Publishes now, or at `publishedAt` (an earlier ISO time: a backdate). */
export const usePublish = (id: number) =>
  useAction(
    (publishedAt: string | null) => unwrap(api().POST('/releases/{id}/publish', { ...idPath(id), body: publishedAt === null ? {} : { publishedAt } })),
    afterWrite,
  );
export const useYank = (id: number) =>
  useAction((reason: string) => unwrap(api().POST('/releases/{id}/yank', { ...idPath(id), body: reason ? { reason } : {} })), afterWrite);
export const useUnyank = (id: number) => useAction(() => unwrap(api().POST('/releases/{id}/unyank', idPath(id))), afterWrite);
export const useDeleteArtifact = (id: number) =>
  useAction((artifactId: number) => unwrap(api().DELETE('/releases/{id}/artifacts/{artifactId}', { params: { path: { id, artifactId } } })), afterWrite);

/** Where the operator's own copy of a file downloads from (never counted). */
export const artifactUrl = (releaseId: number, artifactId: number) =>
  `/o/${encodeURIComponent(currentSlug())}/api/releases/${releaseId}/artifacts/${artifactId}/download`;

export interface UploadFields {
  file: File;
  platform: Platform;
  arch: Arch;
  tauriSignature: string;
  edSignature: string;
}

/**
 * Uploads a file as the raw request body. XMLHttpRequest, not fetch: only it reports how much of
 * the body has been sent, for the progress bar. `sent` is the share sent so far, 0 to 1.
 */
export function useUpload(releaseId: number) {
  const [sent, setSent] = useState<number | null>(null);
  const action = useAction(
    (fields: UploadFields) =>
      new Promise<Artifact>((resolve, reject) => {
        const query = new URLSearchParams({ filename: fields.file.name, platform: fields.platform, arch: fields.arch });
        if (fields.tauriSignature.trim()) query.set('tauriSignature', fields.tauriSignature.trim());
        if (fields.edSignature.trim()) query.set('edSignature', fields.edSignature.trim());
        const request = new XMLHttpRequest();
        request.open('POST', `/o/${encodeURIComponent(currentSlug())}/api/releases/${releaseId}/artifacts?${query}`);
        request.setRequestHeader('content-type', fields.file.type || 'application/octet-stream');
        request.upload.onprogress = (e) => e.lengthComputable && setSent(e.loaded / e.total);
        request.onload = () => {
          let body: Artifact & { error?: string };
          try {
            body = JSON.parse(request.responseText);
          } catch {
            body = {} as typeof body;
          }
          if (request.status === 201) {
            setSent(1);
            resolve(body);
          } else reject(new ApiError(request.status, body.error ?? `the service answered ${request.status}`));
        };
        request.onerror = () => reject(new ApiError(0, 'the upload was cut off: check the connection and try again'));
        setSent(0);
        request.send(fields.file);
      }),
    afterWrite,
  );
  return { ...action, sent };
}
