import { Anchor, Badge, Button, Group, Stack, Text, Title } from '@mantine/core';
import { useState } from 'react';
import { Link, useParams } from 'react-router';
import { useProducts } from '../api/products';
import { useCanWrite } from '../api/session';
import { DateTime } from '../components/display';
import { Guarded } from '../components/feedback';
import { ProductForm } from '../components/product-form';
import { RecordTable } from '../components/record-table';

export default function Products() {
  const { slug = '' } = useParams();
  const write = useCanWrite();
  const [creating, setCreating] = useState(false);
  const products = useProducts();
  return (
    <Stack>
      <Group justify="space-between">
        <Title order={1}>Products</Title>
        <Guarded allowed={write.allowed} reason={write.reason}>
          {(disabled) => (
            <Button onClick={() => setCreating(true)} disabled={disabled}>
              New product
            </Button>
          )}
        </Guarded>
      </Group>
      <RecordTable
        error={products.error}
        label="Products"
        rows={products.data}
        rowKey={(p) => p.id}
        empty="No product yet: create one to issue licences for it."
        minWidth={860}
        columns={[
          [
            'Product',
            (p) => (
              <>
                <Anchor component={Link} to={`/o/${slug}/products/${p.id}`} fw={500}>
                  {p.name}
                </Anchor>
                <Text size="xs" c="dimmed">
                  {p.productKey}
                  {!p.active && ' · inactive'}
                </Text>
              </>
            ),
          ],
          ['Algorithm', (p) => p.algorithmLabel],
          ['Type', (p) => p.licenceType],
          [
            'Key',
            (p) => (
              <Badge color={p.keyState === 'OK' ? 'green' : 'red'} variant="dot" tt="none">
                {p.keyState === 'OK' ? 'OK' : 'Error'}
              </Badge>
            ),
          ],
          [
            'Certificate expires',
            (p) =>
              p.certificateType === 'NONE' ? (
                <Text span c="dimmed" inherit>
                  no certificate
                </Text>
              ) : (
                <DateTime value={p.certificateExpiresAt} withTime={false} />
              ),
          ],
          ['Licences', (p) => p.licenseCount.toLocaleString()],
          [
            'Check token',
            (p) =>
              p.checkTokenSet ? (
                'set'
              ) : (
                <Text span c="dimmed" inherit>
                  not set
                </Text>
              ),
          ],
        ]}
      />
      {creating && <ProductForm opened onClose={() => setCreating(false)} />}
    </Stack>
  );
}
