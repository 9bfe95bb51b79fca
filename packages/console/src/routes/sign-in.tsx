import { Anchor, Button, PasswordInput, TextInput } from '@mantine/core';
import { useQueryClient } from '@tanstack/react-query';
import { useState, type FormEvent } from 'react';
import { useNavigate, useParams, useSearchParams } from 'react-router';
import { api, unwrap } from '../api/client';
import { ErrorText } from '../components/feedback';
import { FormCard } from '../components/form-card';

export default function SignIn() {
  const { slug = '' } = useParams();
  const [params] = useSearchParams();
  const navigate = useNavigate();
  const queryClient = useQueryClient();
  const [username, setUsername] = useState('');
  const [password, setPassword] = useState('');
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);

  const submit = async (event: FormEvent) => {
    event.preventDefault();
    setBusy(true);
    setError(null);
    try {
      await unwrap(api(slug).POST('/auth/login', { body: { username, password } }));
      localStorage.setItem('licensor.lastSlug', slug);
      queryClient.clear();
      const next = params.get('next');
      // Only a path of this organisation's console, never another site.
      navigate(next && next.startsWith(`/o/${slug}/`) && !next.startsWith('//') ? next : `/o/${slug}/`);
    } catch (e) {
      setError(e);
    } finally {
      setBusy(false);
    }
  };

  return (
    <FormCard
      title="Sign in"
      subtitle={
        <>
          to Licensor · organisation <b>{slug}</b>
        </>
      }
      onSubmit={submit}
    >
      <TextInput label="Username" withAsterisk={false} autoComplete="username" value={username} onChange={(e) => setUsername(e.currentTarget.value)} required autoFocus />
      <PasswordInput label="Password" withAsterisk={false} autoComplete="current-password" value={password} onChange={(e) => setPassword(e.currentTarget.value)} required />
      <ErrorText error={error} />
      <Button type="submit" loading={busy} fullWidth>
        Sign in
      </Button>
      <Anchor href="/" size="sm" ta="center">
        Another organisation
      </Anchor>
    </FormCard>
  );
}
