import { Alert, Anchor, Badge, Button, Card, Code, DataList, Group, SimpleGrid, Stack, Text, Textarea, Title } from '@mantine/core';
import { useState, type FormEvent, type ReactNode } from 'react';
import { Link, useParams } from 'react-router';
import { useCustomer } from '../api/customers';
import { useLicence, useVerify, type Verdict } from '../api/licences';
import { useProduct } from '../api/products';
import { useSettings } from '../api/settings';
import { ErrorText } from '../components/feedback';
import { DateTime, days, duration, StatusBadge } from '../components/display';
import { meterClaims, metersText, paramText, splitClaims } from '../components/claims';
import type { ProductParam } from '../components/param-input';
import { useProblems } from '../components/modal-form';

/** A pasted licence string judged as an application would, with the ledger beside it. */
export default function Verify() {
  const [text, setText] = useState('');
  const [verdict, setVerdict] = useState<Verdict | null>(null);
  const verify = useVerify();
  const problems = useProblems({ text: !text.trim() && 'Paste the licence string' });
  // The service takes the text as pasted: it removes the spaces and line breaks an email client adds, and says so.
  const submit = async (event: FormEvent) => {
    event.preventDefault();
    if (!problems.check()) return;
    setVerdict((await verify.run(text))?.value ?? null);
  };
  return (
    <Stack gap="lg">
      <Title order={1}>Verify</Title>
      <form onSubmit={submit} noValidate>
        <Stack>
          <Textarea
            label="Licence string"
            description="Paste the whole string a customer sent"
            autosize
            minRows={4}
            maxRows={10}
            value={text}
            onChange={(e) => setText(e.currentTarget.value)}
            required
            error={problems.of('text')}
            styles={{ input: { fontFamily: 'monospace' } }}
          />
          <Group>
            <Button type="submit" loading={verify.busy}>
              Verify
            </Button>
          </Group>
        </Stack>
      </form>
      <ErrorText error={verify.error} title="Not verified" />
      {verdict?.whitespaceRemoved && (
        <Alert color="blue" variant="light" role="status">
          Line breaks and spaces were removed from the pasted text: a licence string has none, so an email client must have added them.
        </Alert>
      )}
      {verdict && <VerdictCard r={verdict} />}
    </Stack>
  );
}

/** What an application would conclude, in words a support person can repeat to the customer. */
function why(r: Verdict): string {
  const claims = r.claims ?? {};
  switch (r.reason) {
    case 'MALFORMED':
      return 'This is not a licence string: it does not decode. Check that the whole string was pasted, with nothing cut off or added.';
    case 'UNKNOWN_PRODUCT':
      return `It names product “${String(claims.prd)}” of organisation “${String(claims.org)}”, which is not a product here: it was issued by another organisation or deployment.`;
    case 'BAD_SIGNATURE':
      return 'The signature matches none of the product’s keys: the string was altered, or signed elsewhere. An application refuses it.';
    case 'NOT_YET_VALID':
      return 'The signature is good, but the licence has not started yet; an application refuses it until its start.';
    case 'EXPIRED':
      return 'The signature is good, but the licence is past its expiry and grace period; an application refuses it.';
    default:
      return `An application accepts it: the signature is good and today is within its term.${disagreement(r)}`;
  }
}

/** Where the ledger says more than the string can: a valid string may still be refused online. */
function disagreement(r: Verdict): string {
  if (r.ledger.revoked) return ' But the ledger has it revoked: online checks refuse it, and an offline copy works until it expires.';
  if (r.ledger.superseded) return ' But a renewal replaced this term: the application should fetch the current one.';
  if (!r.ledger.known) return ' But no licence with its id is on record here.';
  return '';
}

function VerdictCard({ r }: { r: Verdict }) {
  return (
    <Card withBorder aria-label="Verdict" padding="lg">
      <Stack gap="lg">
        <Group gap="sm" align="flex-start">
          <Badge size="lg" color={r.valid ? 'teal.9' : 'red.9'}>
            {r.valid ? 'Valid' : 'Not valid'}
          </Badge>
          {/* Beside the verdict where there is room, under it on a phone. */}
          <div style={{ flex: '1 1 260px' }}>
            {r.reason && <Code>{r.reason}</Code>}
            <Text size="sm">{why(r)}</Text>
          </div>
        </Group>
        {r.claims && r.signature !== 'VALID' && (
          <Text size="sm" c="dimmed">
            Below is what the string claims; without a good signature nothing proves it.
          </Text>
        )}
        {r.claims && <Details r={r} claims={r.claims} />}
      </Stack>
    </Card>
  );
}

function Section({ title, children }: { title: string; children: ReactNode }) {
  return (
    <section aria-label={title}>
      <Title order={2} size="h5" mb={6}>
        {title}
      </Title>
      <DataList size="sm" gap={6} labelWidth={128}>
        {children}
      </DataList>
    </section>
  );
}

function Line({ label, children }: { label: string; children: ReactNode }) {
  return (
    <DataList.Item>
      <DataList.ItemLabel>{label}</DataList.ItemLabel>
      <DataList.ItemValue>{children}</DataList.ItemValue>
    </DataList.Item>
  );
}

const at = (seconds: unknown) => (typeof seconds === 'number' ? new Date(seconds * 1000).toISOString() : null);

/** The machines a licence is bound to: those its string names, and those its checks bound since (the ledger's seats). */
function boundWords(signed: number, seats: number | null): string {
  const named = signed === 0 ? 'none signed in' : `${signed} fingerprint${signed === 1 ? '' : 's'} signed in`;
  if (seats === null || seats === 0) return signed === 0 ? `${named}: the first check binds` : named;
  return `${named}; ${seats} ${seats === 1 ? 'machine is' : 'machines are'} bound now`;
}

/** Who it belongs to, what it grants, until when, and whether the ledger agrees. */
function Details({ r, claims }: { r: Verdict; claims: Record<string, unknown> }) {
  const { slug = '' } = useParams();
  const zone = useSettings().data?.timezone;
  const product = useProduct(r.product?.id ?? null);
  const customerId = r.ledger.customerId ?? null;
  const customer = useCustomer(customerId);
  // The ledger's licence, for the machines its checks bound (the string names only those bound at issue).
  const licence = useLicence(r.ledger.known && r.ledger.lid ? r.ledger.lid : null);
  const bound = r.ledger.known ? (licence.data?.seatsUsed ?? null) : null;
  const declared = (product.data?.params ?? []) as ProductParam[];
  const labelOf = (name: string) => declared.find((p) => p.key === name)?.label ?? name;
  const params = Object.entries(splitClaims(claims).params);
  const fingerprints = claims.fp === undefined ? 0 : Array.isArray(claims.fp) ? claims.fp.length : 1;
  const lid = String(claims.lid);
  const ledger = r.ledger;

  return (
    <SimpleGrid cols={{ base: 1, md: 2 }} spacing="xl" verticalSpacing="lg">
      <Section title="Who">
        <Line label="Licensee">
          <Text fw={600} size="sm">
            {ledger.licensee ?? (typeof claims.lic === 'string' ? claims.lic : '—')}
          </Text>
        </Line>
        <Line label="Customer">
          {customerId === null ? (
            <Text span c="dimmed" size="sm">
              {ledger.known ? 'none on record' : '—'}
            </Text>
          ) : (
            <>
              <Anchor component={Link} to={`/o/${slug}/customers/${customerId}`} size="sm">
                {customer.data?.name ?? `Customer ${customerId}`}
              </Anchor>
              {customer.data?.email && (
                <Text size="xs" c="dimmed">
                  {customer.data.email}
                </Text>
              )}
            </>
          )}
        </Line>
        <Line label="Licence id">
          <Code>{lid}</Code>
        </Line>
      </Section>

      <Section title="Ledger">
        {ledger.known ? (
          <>
            <Line label="Status">
              <Group gap={6}>
                {ledger.status && <StatusBadge status={ledger.status} />}
                {ledger.archived && <Badge color="gray">archived</Badge>}
              </Group>
            </Line>
            <Line label="Revoked">{ledger.revoked ? 'yes: online checks refuse it' : 'no'}</Line>
            <Line label="This term">
              {ledger.superseded ? (
                <>
                  <Badge color="orange">superseded</Badge>
                  <Text size="sm">
                    A renewal replaced it; the current term expires{' '}
                    {ledger.currentExpiresAt ? <DateTime value={ledger.currentExpiresAt} /> : 'never (perpetual)'}.
                  </Text>
                </>
              ) : (
                'current'
              )}
            </Line>
            <Line label="Licence">
              <Anchor component={Link} to={`/o/${slug}/licences/${ledger.lid}`} size="sm">
                Open the licence
              </Anchor>
            </Line>
          </>
        ) : (
          <Line label="Status">
            <Text size="sm">No licence {lid} is on record here.</Text>
          </Line>
        )}
      </Section>

      <Section title="What it grants">
        <Line label="Product">{r.product ? `${r.product.name} (${r.product.productKey})` : String(claims.prd)}</Line>
        <Line label="Type">
          {typeof claims.typ === 'string' ? claims.typ : 'not stated'}
          {typeof claims.act === 'string' ? `, ${claims.act.toLowerCase()} activation` : ''}
        </Line>
        <Line label="Max machines">{paramText(claims.mm)}</Line>
        <Line label="Bound machines">{boundWords(fingerprints, bound)}</Line>
        {typeof claims.chk === 'number' && <Line label="Checks in">every {duration(claims.chk)}</Line>}
        {typeof claims.max === 'number' && <Line label="Offline for">at most {duration(claims.max)}</Line>}
        {meterClaims(claims.mtr) && <Line label="Meters">{metersText(claims.mtr)}</Line>}
        {params.map(([name, value]) => (
          <Line key={name} label={labelOf(name)}>
            {paramText(value)}
          </Line>
        ))}
      </Section>

      <Section title="Until when">
        <Line label="Issued">
          <DateTime value={at(claims.iat)} />
        </Line>
        {claims.nbf !== undefined && (
          <Line label="Starts">
            <DateTime value={at(claims.nbf)} />
          </Line>
        )}
        <Line label="Expires">
          <Group gap={6}>
            {r.expiry && <StatusBadge status={r.expiry.status} />}
            {claims.exp === undefined ? 'never (perpetual)' : <DateTime value={at(claims.exp)} />}
          </Group>
        </Line>
        <Line label="Grace ends">
          {r.expiry?.graceEndsAt ? <DateTime value={r.expiry.graceEndsAt} /> : '—'}{' '}
          <Text span size="xs" c="dimmed">
            ({days(Number(claims.grace))})
          </Text>
        </Line>
        <Line label="Signature">
          {r.signature}
          {r.signatureAlgorithm ? ` · ${r.signatureAlgorithm}` : ''}
        </Line>
        {zone && <Line label="Times in">{zone}</Line>}
      </Section>
    </SimpleGrid>
  );
}
