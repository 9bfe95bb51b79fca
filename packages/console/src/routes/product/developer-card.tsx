import { Card, Group, SimpleGrid, Stack, Text, Title } from '@mantine/core';
import type { ReactNode } from 'react';
import { useParams } from 'react-router';
import type { Product } from '../../api/products';
import { CopyBox, DateTime, Field, SecretOnce } from '../../components/display';

/**
 * The check token in the words the SDK READMEs use too (issue 45, SPEC 4.4 rule 7): one
 * description, wherever a person reads about it.
 */
export const CHECK_TOKEN = {
  what: 'The check token ships inside your application and identifies it when it checks in.',
  rotating: 'Rotating it cuts off every installed copy: each one holding the old token stops checking in until it is given the new one.',
  trust: 'What makes an answer trustworthy is its receipt, signed with the product’s key and verified by the SDK, not the token.',
};

/** What an application developer needs: the check id and URL, the token once, an SDK snippet. */
export function DeveloperCard({ product, checkToken, keys, children }: { product: Product; checkToken: string | null; keys: string[]; children: ReactNode }) {
  const { slug = '' } = useParams();
  const base = window.location.origin;
  const checkUrl = product.checkId ? `${base}/o/${slug}/api/public/license/${product.checkId}/check` : null;
  const pems = keys.map((pem) => `    \`${pem.trim()}\`,`).join('\n');
  // Runs as written once the SDK is installed (packages/sdk/README.md) and the licence saved as licence.lic.
  const snippet = `import { LicenceClient, readLicenceFile } from '@licensor/sdk';

const client = new LicenceClient({
  baseUrl: '${base}',
  slug: '${slug}',
  productKey: '${product.productKey}',
  checkId: '${product.checkId ?? '(create the check token first)'}',
  checkToken: ${checkToken ? `'${checkToken}'` : "'svcc_…' /* shown once when created or rotated */"},
  publicKeyPem: [ // the key history, current first
${pems}
  ],
  licence: readLicenceFile('licence.lic'), // the customer's licence, as you stored it
});
const result = await client.check();
console.log(result.state === 'VALID' ? 'Licensed on this machine' : \`Not licensed now (\${result.state})\`);`;
  return (
    <Card withBorder component="section" aria-labelledby="developer-heading">
      <Stack gap="sm">
        <Group justify="space-between">
          <div>
            <Title order={2} size="h4" id="developer-heading">
              For application developers
            </Title>
            <Text size="sm" c="dimmed">
              {product.checkTokenSet ? (
                <>
                  Check token set
                  {product.checkRotatedAt && (
                    <>
                      , last rotated <DateTime value={product.checkRotatedAt} />
                    </>
                  )}
                  .
                </>
              ) : (
                'No check token yet: ONLINE and HYBRID licences cannot check in until one is created.'
              )}
            </Text>
            <Text size="sm" mt={4}>
              {CHECK_TOKEN.what} {CHECK_TOKEN.rotating} {CHECK_TOKEN.trust}
            </Text>
          </div>
          {children}
        </Group>
        {checkToken && <SecretOnce value={checkToken} label="check token" />}
        {checkUrl && (
          <SimpleGrid cols={{ base: 1, md: 2 }}>
            <Field label="Check id">
              <CopyBox value={product.checkId!} label="check id" />
            </Field>
            <Field label="Check URL">
              <CopyBox value={checkUrl} label="check URL" />
            </Field>
          </SimpleGrid>
        )}
        <Field label="SDK configuration">
          <Text size="sm" mb={4}>
            Install the SDK as its README says (a package file built with <code>npm pack</code> in <code>packages/sdk</code>; Java, Python and Go under{' '}
            <code>sdks/</code>), then:
          </Text>
          <CopyBox value={snippet} label="SDK configuration" />
        </Field>
      </Stack>
    </Card>
  );
}
