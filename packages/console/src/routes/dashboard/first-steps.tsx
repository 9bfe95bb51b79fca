import { Anchor, Button, Card, Group, List, Stack, Text, ThemeIcon, Title } from '@mantine/core';
import { useLocalStorage } from '@mantine/hooks';
import { Link, useParams } from 'react-router';
import type { Answer } from '../../api/client';
import type { Product } from '../../api/products';

type Dashboard = Answer<'/dashboard', 'get'>;
export interface Step {
  label: string;
  hint: string;
  to: string;
  done: boolean;
}

/** A new organisation's way to its first checked licence, each step ticked once done. */
export function stepsOf(products: Product[], d: Dashboard): Step[] {
  const first = products[0];
  const product = first ? `products/${first.id}` : 'products';
  const checks = d.series.checks.reduce((sum, p) => sum + p.count, 0);
  return [
    { label: 'Create a product', hint: 'What you sell: its signing key and the terms its licences carry.', to: 'products', done: products.length > 0 },
    {
      label: 'Create its check token',
      hint: 'It goes into your application, so installed copies can check in.',
      to: product,
      done: products.some((p) => p.checkTokenSet),
    },
    { label: 'Issue a licence', hint: 'Signed for one customer; send them the licence string or file.', to: 'licences?issue=1', done: d.totals.all > 0 },
    {
      label: 'Check it from your application',
      hint: 'Paste the SDK snippet from the product page into the application and run it.',
      to: product,
      done: checks > 0,
    },
  ];
}

/** The checklist until every step is done, or until someone hides it (an organisation that never checks online). */
export function FirstSteps({ steps }: { steps: Step[] }) {
  const { slug = '' } = useParams();
  const [hidden, setHidden] = useLocalStorage({ key: `licensor.firstSteps.hidden:${slug}`, defaultValue: false });
  if (hidden || steps.every((s) => s.done)) return null;
  return (
    <Card withBorder component="section" aria-labelledby="first-steps-heading" maw={720}>
      <Stack gap="sm">
        <Group justify="space-between" align="flex-start" wrap="nowrap">
          <div>
            <Title order={2} size="h4" id="first-steps-heading">
              First steps
            </Title>
            <Text size="sm" c="dimmed">
              From nothing to an application that checks its licence: {steps.filter((s) => s.done).length} of {steps.length} done.
            </Text>
          </div>
          {steps[0]!.done && (
            <Button variant="subtle" size="compact-sm" onClick={() => setHidden(true)}>
              Hide
            </Button>
          )}
        </Group>
        <List spacing="sm" listStyleType="none" aria-label="First steps">
          {steps.map((step) => (
            <List.Item
              key={step.label}
              icon={
                <ThemeIcon size={22} radius="xl" color={step.done ? 'teal.8' : 'gray.6'} variant={step.done ? 'filled' : 'outline'} aria-hidden>
                  {step.done ? '✓' : ''}
                </ThemeIcon>
              }
            >
              <Anchor component={Link} to={`/o/${slug}/${step.to}`} fw={500} td={step.done ? 'line-through' : undefined}>
                {step.label}
              </Anchor>
              <Text span size="sm" c="dimmed">
                {step.done ? ' (done)' : ''}
              </Text>
              <Text size="sm" c="dimmed">
                {step.hint}
              </Text>
            </List.Item>
          ))}
        </List>
      </Stack>
    </Card>
  );
}
