import { Box, Group, Text } from '@mantine/core';

/** A calendar date (YYYY-MM-DD) as this reader's locale writes a day: "24 Dec", "Dec 24". */
const day = new Intl.DateTimeFormat(undefined, { month: 'short', day: 'numeric', timeZone: 'UTC' });
const dayOf = (date: string) => day.format(new Date(`${date}T00:00:00Z`));

/**
 * Counts per local date as bars: a small SVG rather than a charting library, so the dashboard's
 * first load stays light. Each bar tells its date and count on hover; the whole reads as one image.
 */
export function DayChart({
  title,
  series,
  colour,
  summed = true,
}: {
  title: string;
  series: Array<{ date: string; count: number }>;
  colour: string;
  summed?: boolean;
}) {
  const peak = Math.max(0, ...series.map((p) => p.count));
  const max = Math.max(1, peak);
  const total = series.reduce((sum, p) => sum + p.count, 0);
  const width = 600;
  const height = 150;
  const slot = width / Math.max(1, series.length);
  return (
    <Box>
      <svg
        viewBox={`0 0 ${width} ${height + 18}`}
        width="100%"
        role="img"
        aria-label={
          summed
            ? `${title}: ${total} over the last ${series.length} days, at most ${peak} on one day`
            : `${title}: at most ${peak} over the last ${series.length} days`
        }
      >
        <line x1={0} x2={width} y1={height} y2={height} stroke="var(--mantine-color-default-border)" />
        {series.map((point, i) => {
          const h = (point.count / max) * (height - 8);
          return (
            <g key={point.date}>
              <rect x={i * slot + slot * 0.15} y={height - h} width={slot * 0.7} height={Math.max(h, point.count ? 2 : 0)} rx={2} fill={colour}>
                <title>{`${dayOf(point.date)}: ${point.count.toLocaleString()}`}</title>
              </rect>
              {i % 7 === 0 && (
                <text
                  x={i === 0 ? 0 : i * slot + slot / 2}
                  y={height + 14}
                  fontSize={11}
                  textAnchor={i === 0 ? 'start' : 'middle'}
                  fill="var(--mantine-color-dimmed)"
                >
                  {dayOf(point.date)}
                </text>
              )}
            </g>
          );
        })}
      </svg>
      <Group justify="space-between">
        <Text size="xs" c="dimmed">
          {summed ? `${total.toLocaleString()} in ${series.length} days` : `the last ${series.length} days`}
        </Text>
        <Text size="xs" c="dimmed">
          busiest day {peak.toLocaleString()}
        </Text>
      </Group>
    </Box>
  );
}
