import { Button, Kbd, Modal, NavLink, Stack, Text, TextInput } from '@mantine/core';
import { useDebouncedValue, useHotkeys } from '@mantine/hooks';
import { useState } from 'react';
import { useNavigate, useParams } from 'react-router';
import { useCustomers } from '../../api/customers';
import { useLicencePage } from '../../api/licences';
import { useProducts } from '../../api/products';

const PAGES: Array<[string, string]> = [
  ['Dashboard', ''],
  ['Licences', 'licences'],
  ['Issue licence', 'licences?issue=1'],
  ['Products', 'products'],
  ['Customers', 'customers'],
  ['Members', 'members'],
  ['API tokens', 'tokens'],
  ['Webhooks', 'webhooks'],
  ['Integrations', 'integrations'],
  ['Activity', 'activity'],
  ['Settings', 'settings'],
  ['Verify', 'verify'],
];

/** Ctrl-K / ⌘-K: find a licence, product or customer, or go to any page, all by keyboard. */
export function CommandPalette() {
  const { slug = '' } = useParams();
  const navigate = useNavigate();
  const [opened, setOpened] = useState(false);
  const [text, setText] = useState('');
  const [active, setActive] = useState(0);
  const [q] = useDebouncedValue(text.trim(), 200);
  useHotkeys([['mod+K', () => setOpened(true)]]);
  const licences = useLicencePage({ q, limit: 5 }, opened && q.length >= 2);
  const customers = useCustomers(q, opened && q.length >= 2);
  const products = useProducts(opened);

  const needle = q.toLowerCase();
  const results: Array<{ label: string; hint: string; to: string }> = [
    ...PAGES.filter(([label]) => label.toLowerCase().includes(needle)).map(([label, to]) => ({ label, hint: 'page', to })),
    ...(licences.data?.items ?? []).map((l) => ({ label: l.licensee, hint: `licence · ${l.productName ?? ''} · ${l.status}`, to: `licences/${l.lid}` })),
    ...(products.data ?? [])
      .filter((p) => needle && (p.name.toLowerCase().includes(needle) || p.productKey.toLowerCase().includes(needle)))
      .slice(0, 5)
      .map((p) => ({ label: p.name, hint: 'product', to: `products/${p.id}` })),
    ...(customers.data ?? []).slice(0, 5).map((c) => ({ label: c.name, hint: `customer${c.email ? ` · ${c.email}` : ''}`, to: `customers/${c.id}` })),
  ];

  const go = (to: string) => {
    setOpened(false);
    setText('');
    navigate(`/o/${slug}/${to}`);
  };
  return (
    <>
      <Button variant="default" size="sm" onClick={() => setOpened(true)} visibleFrom="sm">
        <Text size="sm" c="dimmed" mr="xs">
          Search
        </Text>
        <Kbd size="xs">Ctrl K</Kbd>
      </Button>
      <Modal closeButtonProps={{ 'aria-label': 'Close' }} opened={opened} onClose={() => setOpened(false)} title="Go to" size="lg">
        <Stack gap="xs">
          <TextInput
            label="Find a licence, product, customer or page"
            data-autofocus
            value={text}
            onChange={(e) => {
              setText(e.currentTarget.value);
              setActive(0);
            }}
            onKeyDown={(e) => {
              if (e.key === 'ArrowDown') setActive((i) => Math.min(i + 1, results.length - 1));
              if (e.key === 'ArrowUp') setActive((i) => Math.max(i - 1, 0));
              if (e.key === 'Enter' && results[active]) go(results[active].to);
            }}
          />
          <div role="listbox" aria-label="Results">
            {results.map((r, i) => (
              <NavLink
                // biome-ignore lint/suspicious/noArrayIndexKey: two results may lead to the same page
                key={`${r.to}-${i}`}
                role="option"
                aria-selected={i === active}
                active={i === active}
                label={r.label}
                description={r.hint}
                onClick={() => go(r.to)}
              />
            ))}
          </div>
        </Stack>
      </Modal>
    </>
  );
}
