import { Anchor, Button, Group, Select, Stack, Text, TextInput, Title } from '@mantine/core';
import { useState } from 'react';
import { Link, useNavigate, useParams } from 'react-router';
import { useProduct } from '../../api/products';
import { useCreateRelease, useReleases, type NewReleaseBody } from '../../api/releases';
import { useCanWrite } from '../../api/session';
import { DateTime } from '../../components/display';
import { ErrorText, Guarded } from '../../components/feedback';
import { ModalForm, useProblems } from '../../components/modal-form';
import type { ProductParam } from '../../components/param-input';
import { RecordTable } from '../../components/record-table';
import { CHANNELS, channelWords, detailsBody, refusalOf, ReleaseDetailFields, ReleaseStatusBadge, type ReleaseDetails } from '../../components/release-fields';

/** A product's releases (DESIGN.md 20): highest version first, each with its state and downloads. */
export default function ReleasesPage() {
  const { slug = '', id = '' } = useParams();
  const productId = Number(id);
  const product = useProduct(productId);
  const releases = useReleases(productId);
  const write = useCanWrite();
  const [creating, setCreating] = useState(false);
  const base = `/o/${slug}/products/${productId}`;
  return (
    <Stack gap="lg">
      <Group justify="space-between" align="flex-end" wrap="wrap">
        <div>
          <Anchor component={Link} to={base} size="sm">
            ← {product.data?.name ?? 'Product'}
          </Anchor>
          <Title order={1}>Releases</Title>
          <Text c="dimmed" size="sm">
            The files licences of {product.data?.name ?? 'this product'} download: a draft is offered to no one until it is published.
          </Text>
        </div>
        <Guarded allowed={write.allowed} reason={write.reason}>
          {(disabled) => (
            <Button disabled={disabled} onClick={() => setCreating(true)}>
              New release
            </Button>
          )}
        </Guarded>
      </Group>
      <ErrorText error={product.error} />
      <RecordTable
        label="Releases"
        rows={releases.data}
        error={releases.error}
        rowKey={(r) => r.id}
        empty="No release yet: New release makes a draft to upload files to."
        card={{ badge: 'Status' }}
        minWidth={720}
        columns={[
          [
            'Version',
            (r) => (
              <Anchor component={Link} to={`${base}/releases/${r.id}`} fw={600}>
                {r.version}
              </Anchor>
            ),
          ],
          ['Channel', (r) => channelWords(r.channel)],
          ['Status', (r) => <ReleaseStatusBadge status={r.status} />],
          [
            'Published',
            (r) =>
              r.publishedAt ? (
                <DateTime value={r.publishedAt} withTime={false} />
              ) : (
                <Text span c="dimmed" inherit>
                  not yet
                </Text>
              ),
          ],
          ['Files', (r) => r.artifacts.length.toLocaleString()],
          ['Downloads', (r) => r.downloads.toLocaleString()],
        ]}
      />
      {creating && product.data && (
        <NewRelease productId={productId} params={product.data.params as ProductParam[]} onClose={() => setCreating(false)} base={base} />
      )}
    </Stack>
  );
}

const FROM_VERSION = 'from-version';

function NewRelease({ productId, params, base, onClose }: { productId: number; params: ProductParam[]; base: string; onClose: () => void }) {
  const create = useCreateRelease(productId);
  const navigate = useNavigate();
  const [version, setVersion] = useState('');
  const [channel, setChannel] = useState<string>(FROM_VERSION);
  const [details, setDetails] = useState<ReleaseDetails>({ notes: '', requires: {}, bundleVersion: '' });
  const problems = useProblems({ version: !version.trim() && 'Enter the version, such as 1.2.0 or 2.0.0-beta.1' });
  // A version already taken (the one 409) shows beside Version.
  const refusal = refusalOf(create.error, ['version', 'channel', 'notes', 'bundleVersion'], 'version');
  const submit = async () => {
    if (!problems.check()) return false;
    const body: NewReleaseBody = { version: version.trim(), ...detailsBody(details) };
    if (channel !== FROM_VERSION) body.channel = channel;
    const done = await create.run(body);
    if (done) navigate(`${base}/releases/${done.value.id}`);
    return done;
  };
  return (
    <ModalForm
      title="New release"
      submit="Create release"
      onClose={onClose}
      failed="Not created"
      action={{ busy: create.busy, error: refusal.shown ? null : create.error }}
      onSubmit={submit}
    >
      <TextInput
        label="Version"
        description="SemVer without a “v”: 1.2.0, or 2.0.0-beta.1 for a prerelease"
        required
        value={version}
        onChange={(e) => setVersion(e.currentTarget.value)}
        error={problems.of('version') ?? refusal.of('version')}
      />
      <Select
        label="Channel"
        description="Applications on a channel are offered it and the steadier ones"
        data={[{ value: FROM_VERSION, label: 'From the version (stable, or the prerelease’s rc, beta or alpha)' }, ...CHANNELS]}
        value={channel}
        onChange={(v) => setChannel(v ?? FROM_VERSION)}
        allowDeselect={false}
        error={refusal.of('channel')}
      />
      <ReleaseDetailFields params={params} value={details} onChange={setDetails} refusal={refusal} />
    </ModalForm>
  );
}
