import { Button, Text } from '@mantine/core';
import type { FormEvent } from 'react';
import { useNavigate, useParams } from 'react-router';
import { useOpenPortal } from '../api/portal';
import { FormCard } from '../components/form-card';

/**
 * Where a portal link lands. Opening it uses nothing up (mail scanners follow links); only the
 * button's POST does, and opens the customer's portal.
 */
export default function PortalOpen() {
  const { slug = '', code = '' } = useParams();
  const navigate = useNavigate();
  const session = useOpenPortal(slug);
  const open = async (event: FormEvent) => {
    event.preventDefault();
    if (await session.run(code)) navigate(`/o/${slug}/portal/`, { replace: true });
  };
  // Whatever the refusal (used, expired, revoked), the customer's next step is the same.
  if (session.error) {
    return (
      <FormCard title="This link has expired" subtitle="Portal links work once and for 24 hours." onSubmit={(e) => e.preventDefault()}>
        <Text size="sm">Ask your vendor for a new link to see your licences.</Text>
      </FormCard>
    );
  }
  return (
    <FormCard title="Your licences" subtitle="A link from your vendor to see your licences and free a computer you no longer use." onSubmit={open}>
      <Text size="sm" c="dimmed">
        The link works once: it opens a session in this browser for 8 hours.
      </Text>
      <Button type="submit" loading={session.busy} fullWidth>
        Open my licences
      </Button>
    </FormCard>
  );
}
