import { Anchor, Button, Center, Paper, PasswordInput, Stack, Text, TextInput, Title } from '@mantine/core';
import { useQueryClient } from '@tanstack/react-query';
import { useState, type FormEvent } from 'react';
import { useNavigate, useParams, useSearchParams } from 'react-router';
import { api, unwrap } from '../api/client';
import { ErrorText } from '../components/feedback';

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
    <Center mih="100vh" p="md">
      <Paper withBorder shadow="sm" p="xl" w={380} maw="100%" component="main">
        <form onSubmit={submit}>
          <Stack>
            <div>
              <Title order={1} size="h2">
                Sign in
              </Title>
              <Text c="dimmed" size="sm">
                to Licensor · organisation <b>{slug}</b>
              </Text>
            </div>
            <TextInput label="Username" withAsterisk={false} autoComplete="username" value={username} onChange={(e) => setUsername(e.currentTarget.value)} required autoFocus />
            <PasswordInput label="Password" withAsterisk={false} autoComplete="current-password" value={password} onChange={(e) => setPassword(e.currentTarget.value)} required />
            <ErrorText error={error} />
            <Button type="submit" loading={busy} fullWidth>
              Sign in
            </Button>
            <Anchor href="/" size="sm" ta="center">
              Another organisation
            </Anchor>
          </Stack>
        </form>
      </Paper>
    </Center>
  );
}
