import { Anchor, Card, Group, Progress, SimpleGrid, Stack, Text, Title } from '@mantine/core';
import { Link, useParams } from 'react-router';
import { type UsageMeter, useDashboard, useDashboardUsage } from '../../api/dashboard';
import { useProducts } from '../../api/products';
import { ErrorText, Loading } from '../../components/feedback';
import { DayChart } from '../../components/day-chart';
import { RecordTable } from '../../components/record-table';
import { DateTime, StatusBadge } from '../../components/display';
import { FirstSteps, stepsOf } from './first-steps';

function Figure({ label, value, hint }: { label: string; value: number | string; hint?: string }) {
  return (
    <Card withBorder padding="md">
      <Text size="xs" c="dimmed" tt="uppercase" fw={600}>
        {label}
      </Text>
      <Text fz={28} fw={700} lh={1.2}>
        {value}
      </Text>
      {hint && (
        <Text size="xs" c="dimmed">
          {hint}
        </Text>
      )}
    </Card>
  );
}

type Series = Array<{ date: string; count: number }>;
const sum = (series: Series) => series.reduce((total, point) => total + point.count, 0);

/** Trials apart from every other figure (DESIGN.md 18): running now, started and converted per day. */
function Trials({ trials }: { trials: { active: number; started: Series; converted: Series } }) {
  const { slug = '' } = useParams();
  const started = sum(trials.started);
  const converted = sum(trials.converted);
  return (
    <Card withBorder>
      <Title order={2} size="h4" mb="sm">
        Trials
      </Title>
      <SimpleGrid cols={{ base: 1, md: 3 }}>
        <Group grow align="flex-start">
          <Anchor component={Link} to={`/o/${slug}/licences?trial=true&status=ACTIVE`} underline="never">
            <Text fz={24} fw={700}>
              {trials.active.toLocaleString()}
            </Text>
            <Text size="xs" c="dimmed">
              running now
            </Text>
          </Anchor>
          <div>
            <Text fz={24} fw={700}>
              {started.toLocaleString()}
            </Text>
            <Text size="xs" c="dimmed">
              started in {trials.started.length} days
            </Text>
          </div>
          <div>
            <Text fz={24} fw={700}>
              {converted.toLocaleString()}
            </Text>
            <Text size="xs" c="dimmed">
              converted{started > 0 ? ` (${Math.round((converted / started) * 100)}%)` : ''}
            </Text>
          </div>
        </Group>
        {(
          [
            ['Started per day', trials.started, 'var(--mantine-color-violet-6)'],
            ['Converted per day', trials.converted, 'var(--mantine-color-green-6)'],
          ] as const
        ).map(([title, series, colour]) => (
          <div key={title}>
            <Text size="sm" fw={500}>
              {title}
            </Text>
            <DayChart title={`Trials ${title.toLowerCase()}`} series={series} colour={colour} />
          </div>
        ))}
      </SimpleGrid>
    </Card>
  );
}

/** Top consumers (DESIGN.md 19): per meter the products declare, the licences that used it most this period. */
function TopConsumers({ meters }: { meters: UsageMeter[] }) {
  const { slug = '' } = useParams();
  return (
    <Card withBorder>
      <Title order={2} size="h4" mb="sm">
        Top consumers
      </Title>
      <SimpleGrid cols={{ base: 1, md: 2 }}>
        {meters.map((meter) => (
          <div key={`${meter.productId}-${meter.key}`}>
            <Text size="sm" fw={600}>
              {meter.label}{' '}
              <Text span size="xs" c="dimmed">
                · {meter.productKey}
              </Text>
            </Text>
            <Text size="xs" c="dimmed" mb={6}>
              {meter.resetsAt ? (
                <>
                  resets <DateTime value={meter.resetsAt} />
                </>
              ) : (
                'never resets'
              )}
            </Text>
            {meter.top.length === 0 ? (
              <Text size="sm" c="dimmed">
                No use this period.
              </Text>
            ) : (
              <Stack gap={6}>
                {meter.top.map((row) => (
                  <div key={row.lid}>
                    <Group justify="space-between" gap="xs" wrap="nowrap">
                      <Anchor component={Link} to={`/o/${slug}/licences/${row.lid}`} size="sm" truncate>
                        {row.licensee}
                      </Anchor>
                      <Text size="sm" style={{ whiteSpace: 'nowrap' }}>
                        {row.used.toLocaleString()}
                        {row.limit === null ? '' : ` of ${row.limit.toLocaleString()}`}
                      </Text>
                    </Group>
                    {row.limit !== null && (
                      <Progress
                        value={row.limit === 0 ? 100 : Math.min(100, (row.used / row.limit) * 100)}
                        color={row.used >= row.limit ? 'red' : 'indigo'}
                        size="sm"
                        aria-label={`${meter.label} used by ${row.licensee}`}
                      />
                    )}
                  </div>
                ))}
              </Stack>
            )}
          </div>
        ))}
      </SimpleGrid>
    </Card>
  );
}

export default function Dashboard() {
  const { slug = '' } = useParams();
  const dashboard = useDashboard();
  const products = useProducts();
  const usage = useDashboardUsage();
  const d = dashboard.data;
  const steps = d && products.data ? stepsOf(products.data, d) : null;
  const n = (value: number) => value.toLocaleString();

  return (
    <Stack gap="lg">
      <Title order={1}>Dashboard</Title>
      <ErrorText error={dashboard.error} />
      <ErrorText error={products.error} />
      {steps && <FirstSteps steps={steps} />}
      {!d || !steps ? (
        !dashboard.error && <Loading label="Loading the figures" />
      ) : !steps[0]!.done ? null : (
        <>
          <SimpleGrid cols={{ base: 2, sm: 3, lg: 6 }} aria-label="Licence figures">
            <Figure label="Licences" value={n(d.totals.all)} hint="not archived" />
            <Figure label="Active" value={n(d.totals.byStatus.ACTIVE)} />
            <Figure label="In grace" value={n(d.totals.byStatus.GRACE)} />
            <Figure label="Expired" value={n(d.totals.byStatus.EXPIRED)} />
            <Figure label="Revoked" value={n(d.totals.byStatus.REVOKED)} />
            <Figure label="Seats in use now" value={n(d.seatsUsed)} hint="bound machines and live leases" />
          </SimpleGrid>

          <SimpleGrid cols={{ base: 1, md: 3 }}>
            <Card withBorder>
              <Title order={2} size="h4" mb="sm">
                Expiring soon
              </Title>
              <Group grow>
                {(
                  [
                    ['d7', '7 days', '7d'],
                    ['d30', '30 days', '30d'],
                    ['d90', '90 days', '90d'],
                  ] as const
                ).map(([field, label, window]) => (
                  <Anchor key={field} component={Link} to={`/o/${slug}/licences?window=${window}`} underline="never">
                    <Text fz={24} fw={700}>
                      {n(d.expiring[field])}
                    </Text>
                    <Text size="xs" c="dimmed">
                      within {label}
                    </Text>
                  </Anchor>
                ))}
              </Group>
            </Card>
            <Card withBorder>
              <Title order={2} size="h4" mb="sm">
                By type
              </Title>
              <Group grow>
                {(['OFFLINE', 'ONLINE', 'HYBRID'] as const).map((type) => (
                  <div key={type}>
                    <Text fz={24} fw={700}>
                      {n(d.totals.byType[type])}
                    </Text>
                    <Text size="xs" c="dimmed">
                      {type.toLowerCase()}
                    </Text>
                  </div>
                ))}
              </Group>
            </Card>
            <Card withBorder>
              <Title order={2} size="h4" mb="sm">
                Plan
              </Title>
              {d.plan.limit === null ? (
                <Text>
                  <b>{n(d.plan.used)}</b> counting licences · no limit
                </Text>
              ) : (
                <>
                  <Text mb={6}>
                    <b>{n(d.plan.used)}</b> of {n(d.plan.limit)} licences used
                  </Text>
                  <Progress
                    value={d.plan.limit === 0 ? 100 : Math.min(100, (d.plan.used / d.plan.limit) * 100)}
                    color={d.plan.used >= d.plan.limit ? 'red' : 'indigo'}
                    aria-label="Plan usage"
                  />
                </>
              )}
              <Text size="xs" c="dimmed" mt={6}>
                Pending: {n(d.totals.byStatus.PENDING)}
              </Text>
            </Card>
          </SimpleGrid>

          <SimpleGrid cols={{ base: 1, md: 2 }}>
            {(
              [
                ['Issued per day', d.series.issued, 'var(--mantine-color-indigo-6)'],
                ['Checks per day', d.series.checks, 'var(--mantine-color-teal-6)'],
              ] as const
            ).map(([title, series, colour]) => (
              <Card withBorder key={title}>
                <Title order={2} size="h4" mb="sm">
                  {title}
                </Title>
                <DayChart title={title} series={series} colour={colour} />
              </Card>
            ))}
          </SimpleGrid>

          {(products.data?.some((p) => p.trialDays > 0) || d.trials.active > 0 || sum(d.trials.started) > 0) && <Trials trials={d.trials} />}

          {usage.data && usage.data.meters.length > 0 && <TopConsumers meters={usage.data.meters} />}
          <ErrorText error={usage.error} />

          <Card withBorder>
            <Title order={2} size="h4" mb="sm">
              Next to expire
            </Title>
            <RecordTable
              label="Next to expire"
              card={{ badge: 'Status' }}
              rows={d.expiringSoon}
              rowKey={(licence) => licence.lid}
              empty="No licence expires soon."
              minWidth={520}
              columns={[
                [
                  'Licensee',
                  (licence) => (
                    <Anchor component={Link} to={`/o/${slug}/licences/${licence.lid}`}>
                      {licence.licensee}
                    </Anchor>
                  ),
                ],
                ['Product', (licence) => licence.productName],
                ['Status', (licence) => <StatusBadge status={licence.status} />],
                ['Expires', (licence) => <DateTime value={licence.expiresAt} />],
              ]}
            />
          </Card>
        </>
      )}
    </Stack>
  );
}
