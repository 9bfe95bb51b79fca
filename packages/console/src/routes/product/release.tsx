import { Anchor, Button, Card, Code, CopyButton, FileInput, Group, Progress, Select, SimpleGrid, Stack, Text, Textarea, TextInput, Title } from '@mantine/core';
import { useState, type FormEvent } from 'react';
import { Link, useNavigate, useParams } from 'react-router';
import { bound } from '../../api/action';
import { useProduct } from '../../api/products';
import {
  artifactUrl,
  useDeleteArtifact,
  useDeleteRelease,
  usePublish,
  useRelease,
  useSaveRelease,
  useUnyank,
  useUpload,
  useYank,
  type Arch,
  type Artifact,
  type Platform,
  type Release,
} from '../../api/releases';
import { useCanWrite } from '../../api/session';
import { bytes, DateTime, Field } from '../../components/display';
import { ConfirmButton, ErrorText, Guarded, Loading } from '../../components/feedback';
import { Notes } from '../../components/markdown';
import { ModalForm, useProblems } from '../../components/modal-form';
import type { ProductParam } from '../../components/param-input';
import { RecordTable } from '../../components/record-table';
import {
  ARCHES,
  channelWords,
  PLATFORMS,
  detailsBody,
  refusalOf,
  ReleaseDetailFields,
  ReleaseStatusBadge,
  requiresText,
  targetWords,
  type ReleaseDetails,
  type Requires,
} from '../../components/release-fields';

type Write = { allowed: boolean; reason: string };

/** A release (DESIGN.md 20): its notes, its files with their hashes and downloads, and its lifecycle. */
export default function ReleasePage() {
  const { slug = '', id = '', releaseId = '' } = useParams();
  const release = useRelease(Number(releaseId));
  const product = useProduct(Number(id));
  const write = useCanWrite();
  const [editing, setEditing] = useState(false);
  if (release.error) return <ErrorText error={release.error} />;
  if (!release.data) return <Loading label="Loading the release" />;
  const r = release.data;
  const params = (product.data?.params ?? []) as ProductParam[];
  const list = `/o/${slug}/products/${id}/releases`;
  return (
    <Stack gap="lg">
      <Group justify="space-between" align="flex-start" wrap="wrap">
        <div style={{ minWidth: 0 }}>
          <Anchor component={Link} to={list} size="sm">
            ← Releases{product.data ? ` of ${product.data.name}` : ''}
          </Anchor>
          <Group gap="xs" align="center">
            <Title order={1} style={{ overflowWrap: 'anywhere' }}>
              {r.version}
            </Title>
            <ReleaseStatusBadge status={r.status} />
          </Group>
          <Text size="sm" c="dimmed">
            {channelWords(r.channel)} channel · {STATE_WORDS[r.status]}
          </Text>
        </div>
        <Guarded allowed={write.allowed} reason={write.reason}>
          {(disabled) => (
            <Group gap="xs">
              <Button variant="default" disabled={disabled} onClick={() => setEditing(true)}>
                Edit release
              </Button>
              <Lifecycle release={r} disabled={disabled} list={list} />
            </Group>
          )}
        </Guarded>
      </Group>

      <Card withBorder>
        <SimpleGrid cols={{ base: 1, xs: 2, md: 4 }} spacing="lg" verticalSpacing="md">
          <Field label="Published">
            {r.publishedAt ? <DateTime value={r.publishedAt} /> : 'not yet'}
            {r.publishedBy && (
              <Text span size="xs" c="dimmed">
                {' '}
                by {r.publishedBy}
              </Text>
            )}
          </Field>
          <Field label="Downloads">{r.downloads.toLocaleString()}</Field>
          <Field label="Requires">{requiresText(r.requires, params)}</Field>
          <Field label="Bundle version">{r.bundleVersion ?? 'the version'}</Field>
          <Field label="Created">
            <DateTime value={r.createdAt} />{' '}
            <Text span size="xs" c="dimmed">
              by {r.createdBy}
            </Text>
          </Field>
          {r.status === 'YANKED' && (
            <Field label="Yanked">
              <DateTime value={r.yankedAt} />
              {r.yankedReason && <Text size="sm">“{r.yankedReason}”</Text>}
            </Field>
          )}
        </SimpleGrid>
      </Card>

      <Card withBorder component="section" aria-labelledby="notes-heading">
        <Title order={2} size="h4" id="notes-heading" mb="xs">
          Notes
        </Title>
        {r.notes ? (
          <Notes text={r.notes} />
        ) : (
          <Text size="sm" c="dimmed">
            No notes: Edit release adds them.
          </Text>
        )}
      </Card>

      <section aria-labelledby="files-heading">
        <Title order={2} size="h4" id="files-heading" mb="xs">
          Files
        </Title>
        <Stack>
          <Artifacts release={r} write={write} />
          {r.status === 'DRAFT' && <Upload release={r} write={write} />}
        </Stack>
      </section>
      {editing && <EditRelease release={r} params={params} onClose={() => setEditing(false)} />}
    </Stack>
  );
}

const STATE_WORDS: Record<Release['status'], string> = {
  DRAFT: 'a draft: offered to no licence until it is published',
  PUBLISHED: 'offered to the licences it covers',
  YANKED: 'withdrawn: offered to no licence, its files kept',
};

/**
 * Publish (with a backdate), Yank, Unyank or Delete release: whichever the release's state allows.
 * Each keyed, so the button of the next state never inherits the dialog just confirmed.
 */
function Lifecycle({ release: r, disabled, list }: { release: Release; disabled: boolean; list: string }) {
  const publish = usePublish(r.id);
  const yank = useYank(r.id);
  const unyank = useUnyank(r.id);
  const remove = useDeleteRelease(r.id);
  const navigate = useNavigate();
  const [backdate, setBackdate] = useState('');
  const [reason, setReason] = useState('');
  if (r.status === 'DRAFT')
    return (
      <>
        <ConfirmButton
          key="publish"
          label="Publish"
          title={`Publish ${r.version}`}
          disabled={disabled || r.artifacts.length === 0}
          consequence={
            r.artifacts.length === 0
              ? 'Upload a file first: a release without files cannot be published.'
              : 'Its files are signed and offered to every licence the release covers, through the download links and the updaters’ feeds. Its files can no longer change.'
          }
          action={{ ...publish, run: () => publish.run(backdate ? new Date(backdate).toISOString() : null) }}
        >
          <TextInput
            type="datetime-local"
            label="Backdate to"
            description={`Empty: now. An earlier time, in this browser’s zone (${Intl.DateTimeFormat().resolvedOptions().timeZone}): licences whose updates ended after it get this release.`}
            step={1}
            value={backdate}
            onChange={(e) => setBackdate(e.currentTarget.value)}
          />
          {backdate && !Number.isNaN(new Date(backdate).getTime()) && (
            <Text size="sm">
              Published as of <DateTime value={new Date(backdate).toISOString()} />
            </Text>
          )}
        </ConfirmButton>
        <ConfirmButton
          key="delete"
          label="Delete release"
          title={`Delete ${r.version}`}
          color="red"
          disabled={disabled}
          consequence="The draft and its files are deleted. This cannot be undone."
          action={{
            ...remove,
            run: async () => {
              const done = await remove.run();
              if (done) navigate(list);
              return done;
            },
          }}
        />
      </>
    );
  if (r.status === 'PUBLISHED')
    return (
      <ConfirmButton
        key="yank"
        label="Yank"
        title={`Yank ${r.version}`}
        color="red"
        disabled={disabled}
        consequence="Licences are no longer offered it, by download links or the updaters’ feeds; its files are kept, and Unyank offers it again."
        action={{ ...yank, run: () => yank.run(reason.trim()) }}
      >
        <Textarea
          label="Reason"
          description="Optional; kept with the release and its activity"
          maxLength={500}
          autosize
          minRows={2}
          value={reason}
          onChange={(e) => setReason(e.currentTarget.value)}
        />
      </ConfirmButton>
    );
  return (
    <ConfirmButton
      key="unyank"
      label="Unyank"
      title={`Unyank ${r.version}`}
      disabled={disabled}
      consequence="The release is offered again to the licences it covers, with its original publication date."
      action={unyank}
    />
  );
}

/** A digest shortened for the eye, whole for the clipboard. */
function Digest({ value, name }: { value: string; name: string }) {
  return (
    <Group gap={4} wrap="nowrap">
      <Code title={value}>{value.slice(0, 12)}…</Code>
      <CopyButton value={value}>
        {({ copied, copy }) => (
          <Button variant="subtle" size="compact-xs" onClick={copy} aria-label={`Copy the SHA-256 of ${name}`}>
            {copied ? 'Copied' : 'Copy'}
          </Button>
        )}
      </CopyButton>
    </Group>
  );
}

function Artifacts({ release: r, write }: { release: Release; write: Write }) {
  const remove = useDeleteArtifact(r.id);
  return (
    <RecordTable
      label="Files"
      rows={r.artifacts}
      rowKey={(a) => a.id}
      empty={r.status === 'DRAFT' ? 'No file yet: upload one below.' : 'No file.'}
      card={{ actions: 'Actions' }}
      minWidth={820}
      columns={[
        [
          'File',
          (a) => (
            <Text style={{ overflowWrap: 'anywhere' }} inherit fw={600}>
              {a.filename}
            </Text>
          ),
        ],
        ['For', (a) => targetWords(a.platform, a.arch)],
        ['Size', (a) => <span style={{ whiteSpace: 'nowrap' }}>{bytes(a.size)}</span>],
        ['SHA-256', (a) => <Digest value={a.sha256} name={a.filename} />],
        ['Downloads', (a) => a.downloads.toLocaleString()],
        [
          'Actions',
          (a: Artifact) => (
            <Group gap="xs" wrap="nowrap">
              <Button
                component="a"
                href={artifactUrl(r.id, a.id)}
                download={a.filename}
                variant="subtle"
                size="compact-sm"
                aria-label={`Download ${a.filename}`}
              >
                Download
              </Button>
              {r.status === 'DRAFT' && (
                <Guarded allowed={write.allowed} reason={write.reason}>
                  {(disabled) => (
                    <ConfirmButton
                      compact
                      label="Delete"
                      title={`Delete ${a.filename}`}
                      color="red"
                      disabled={disabled}
                      consequence="The file is removed from the draft and its bytes deleted."
                      action={bound(remove, a.id)}
                    />
                  )}
                </Guarded>
              )}
            </Group>
          ),
        ],
      ]}
    />
  );
}

/** Upload artifact: the file streams to the service as it is, its progress shown as it goes. */
function Upload({ release: r, write }: { release: Release; write: Write }) {
  const upload = useUpload(r.id);
  const [file, setFile] = useState<File | null>(null);
  const [platform, setPlatform] = useState<Platform | null>(null);
  const [arch, setArch] = useState<Arch | null>(null);
  const [tauriSignature, setTauriSignature] = useState('');
  const [edSignature, setEdSignature] = useState('');
  const [done, setDone] = useState<string | null>(null);
  const problems = useProblems({ file: !file && 'Choose the file', platform: !platform && 'Choose the platform', arch: !arch && 'Choose the architecture' });
  const submit = async (event: FormEvent) => {
    event.preventDefault();
    if (!problems.check()) return;
    setDone(null);
    const uploaded = await upload.run({ file: file!, platform: platform!, arch: arch!, tauriSignature, edSignature });
    if (uploaded) {
      setDone(uploaded.value.filename);
      setFile(null);
      setTauriSignature('');
      setEdSignature('');
      problems.reset();
    }
  };
  const percent = Math.round((upload.sent ?? 0) * 100);
  const disabled = !write.allowed || upload.busy;
  return (
    <Card withBorder component="section" aria-labelledby="upload-heading">
      <Title order={3} size="h5" id="upload-heading" mb="xs">
        Upload artifact
      </Title>
      <form onSubmit={submit} aria-label="Upload artifact" noValidate>
        <Stack gap="sm">
          <SimpleGrid cols={{ base: 1, sm: 3 }}>
            <FileInput
              label="File"
              placeholder="Choose a file"
              required
              clearable
              value={file}
              onChange={setFile}
              disabled={disabled}
              error={problems.of('file')}
            />
            <Select
              label="Platform"
              data={PLATFORMS}
              value={platform}
              onChange={(v) => setPlatform(v as Platform | null)}
              required
              disabled={disabled}
              error={problems.of('platform')}
            />
            <Select
              label="Arch"
              data={ARCHES}
              value={arch}
              onChange={(v) => setArch(v as Arch | null)}
              required
              disabled={disabled}
              error={problems.of('arch')}
            />
          </SimpleGrid>
          <SimpleGrid cols={{ base: 1, sm: 2 }}>
            <TextInput
              label="Tauri signature"
              description="The .sig file’s content, for Tauri’s updater"
              value={tauriSignature}
              onChange={(e) => setTauriSignature(e.currentTarget.value)}
              disabled={disabled}
            />
            <TextInput
              label="Sparkle signature"
              description="The EdDSA signature sign_update printed, for Sparkle"
              value={edSignature}
              onChange={(e) => setEdSignature(e.currentTarget.value)}
              disabled={disabled}
            />
          </SimpleGrid>
          {upload.sent !== null && (
            <div>
              <Progress.Root
                size="lg"
                role="progressbar"
                aria-label="Upload progress"
                aria-valuemin={0}
                aria-valuemax={100}
                aria-valuenow={percent}
                aria-valuetext={done ? `${done} uploaded` : `${percent}% sent`}
              >
                <Progress.Section value={percent} color={upload.error ? 'red' : done ? 'green' : 'indigo'} withAria={false} animated={upload.busy} />
              </Progress.Root>
              <Text size="sm" mt={4} role="status">
                {done ? `${done} uploaded: its hashes were computed as it arrived.` : upload.error ? 'Not uploaded.' : `${percent}% sent…`}
              </Text>
            </div>
          )}
          <ErrorText error={upload.error} title="Not uploaded" />
          <Group justify="flex-end">
            <Guarded allowed={write.allowed} reason={write.reason}>
              {(guarded) => (
                <Button type="submit" loading={upload.busy} disabled={guarded}>
                  Upload
                </Button>
              )}
            </Guarded>
          </Group>
        </Stack>
      </form>
    </Card>
  );
}

function EditRelease({ release: r, params, onClose }: { release: Release; params: ProductParam[]; onClose: () => void }) {
  const save = useSaveRelease(r.id);
  const [details, setDetails] = useState<ReleaseDetails>({ notes: r.notes, requires: r.requires as Requires, bundleVersion: r.bundleVersion ?? '' });
  const refusal = refusalOf(save.error, ['notes', 'bundleVersion']);
  return (
    <ModalForm
      title={`Edit ${r.version}`}
      submit="Save release"
      onClose={onClose}
      failed="Not saved"
      action={{ busy: save.busy, error: refusal.shown ? null : save.error }}
      onSubmit={() => save.run(detailsBody(details))}
    >
      <ReleaseDetailFields params={params} value={details} onChange={setDetails} refusal={refusal} />
    </ModalForm>
  );
}
