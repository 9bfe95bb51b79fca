import { Badge, Button, Group, Spoiler, Stack, Text, Title } from '@mantine/core';
import { usePortalFileLink, usePortalReleases, usePortalResetLinks } from '../api/portal';
import type { Answer } from '../api/client';
import { bytes, DateTime } from '../components/display';
import { ConfirmButton, ErrorText } from '../components/feedback';
import { Notes } from '../components/markdown';
import { channelWords, targetWords } from '../components/release-fields';

type PortalRelease = Answer<'/portal/licenses/{lid}/releases', 'get'>[number];

/** Why the customer may not download a release, in their words. */
function Refusal({ reason, updatesUntil }: { reason: PortalRelease['reason']; updatesUntil: string | null }) {
  switch (reason) {
    case 'UPDATES_EXPIRED':
      return (
        <>
          Your updates ended on <DateTime value={updatesUntil} withTime={false} /> — renew to get this version
        </>
      );
    case 'NOT_ENTITLED':
      return <>Not included in your licence — ask your vendor about upgrading</>;
    case 'REVOKED':
      return <>Your licence was revoked: its downloads are closed</>;
    case 'NOT_YET_VALID':
      return <>Your licence has not started yet: downloads open when it does</>;
    case 'EXPIRED':
      return <>Your trial has ended: downloads come with a paid licence</>;
    default:
      return null;
  }
}

/** The portal licence's Downloads (DESIGN.md 20): each release, whether it is covered, a Download per file, and Reset download links. */
export function PortalDownloads({ lid, productName, updatesUntil }: { lid: string; productName: string; updatesUntil: string | null }) {
  const releases = usePortalReleases(lid);
  const link = usePortalFileLink(lid);
  const reset = usePortalResetLinks(lid);
  if (releases.error) return <ErrorText error={releases.error} />;
  if (!releases.data || releases.data.length === 0) return null;
  const open = async (artifactId: number) => {
    const done = await link.run(artifactId);
    // The link answers with the file as an attachment: the page stays where it is.
    if (done) window.location.assign(done.value.url);
  };
  return (
    <section aria-labelledby={`downloads-${lid}`}>
      <Group justify="space-between" mb="xs" wrap="wrap">
        <Title order={2} size="h4" id={`downloads-${lid}`}>
          Downloads
        </Title>
        <ConfirmButton
          compact
          label="Reset download links"
          title={`Reset the download links of ${productName}`}
          consequence="Use this if an update link was shared or leaked. Links made before stop working at once: your installed applications get new ones the next time they look for updates, and any feed address you copied into another tool must be copied again. Nothing is uninstalled."
          action={reset}
        />
      </Group>
      <ErrorText error={link.error} title="Not downloaded" />
      <Stack gap="md">
        {releases.data.map((r) => (
          <div key={r.id}>
            <Group gap="xs" wrap="wrap">
              <Text fw={600}>Version {r.version}</Text>
              {r.channel !== 'stable' && (
                <Badge variant="light" color="gray" tt="none">
                  {channelWords(r.channel)}
                </Badge>
              )}
              <Text size="sm" c="dimmed">
                published <DateTime value={r.publishedAt} withTime={false} />
              </Text>
            </Group>
            <Text size="sm">{r.covered ? 'Included in your licence' : <Refusal reason={r.reason} updatesUntil={updatesUntil} />}</Text>
            {r.notes && (
              <Spoiler maxHeight={72} showLabel="Show all notes" hideLabel="Show less" mt={4}>
                <Notes text={r.notes} />
              </Spoiler>
            )}
            {r.covered && (
              <Stack gap={4} mt="xs">
                {r.artifacts.map((a) => (
                  <Group key={a.id} justify="space-between" wrap="nowrap" gap="sm">
                    <div style={{ minWidth: 0 }}>
                      <Text size="sm" style={{ overflowWrap: 'anywhere' }}>
                        {a.filename}
                      </Text>
                      <Text size="xs" c="dimmed">
                        {targetWords(a.platform, a.arch)} · {bytes(a.size)}
                      </Text>
                    </div>
                    <Button variant="light" size="compact-sm" style={{ flexShrink: 0 }} onClick={() => void open(a.id)} aria-label={`Download ${a.filename}`}>
                      Download
                    </Button>
                  </Group>
                ))}
              </Stack>
            )}
          </div>
        ))}
      </Stack>
    </section>
  );
}
