import { Button, Text } from '@mantine/core';
import { useState, type FormEvent } from 'react';
import { useNavigate, useParams } from 'react-router';
import { api, unwrap } from '../api/client';
import { FormCard } from '../components/form-card';

/**
 * Where a portal link lands. Opening it uses nothing up (mail scanners follow links); only the
 * button's POST does, and opens the customer's portal.
 */
export default function PortalOpen() {
  const { slug = '', code = '' } = useParams();
  const navigate = useNavigate();
  const [failed, setFailed] = useState(false);
  const [busy, setBusy] = useState(false);
  const open = async (event: FormEvent) => {
    event.preventDefault();
    setBusy(true);
    try {
      await unwrap(api(slug).POST('/portal/session', { body: { code } }));
      navigate(`/o/${slug}/portal/`, { replace: true });
    } catch {
      setFailed(true);
    } finally {
      setBusy(false);
    }
  };
  if (failed) {
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
      <Button type="submit" loading={busy} fullWidth>
        Open my licences
      </Button>
    </FormCard>
  );
}
