import { Button, PasswordInput, TextInput } from '@mantine/core';
import { useQueryClient } from '@tanstack/react-query';
import { useState, type FormEvent, type ReactNode } from 'react';
import { useNavigate, useSearchParams } from 'react-router';
import { ErrorText } from './feedback';
import { FormCard } from './form-card';

/**
 * The sign-in form of an organisation or of the control plane: after signing in, back to the
 * page a 401 came from (`?next=`, only a path under `home`, never another site) or to `home`.
 */
export function SignInForm(props: {
  subtitle: ReactNode;
  home: string;
  signIn: (username: string, password: string) => Promise<unknown>;
  /** A passkey sign-in (DESIGN.md 9): request options, let the browser sign, send the answer. */
  passkey: () => Promise<unknown>;
  children?: ReactNode;
}) {
  const [params] = useSearchParams();
  const navigate = useNavigate();
  const queryClient = useQueryClient();
  const [username, setUsername] = useState('');
  const [password, setPassword] = useState('');
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);

  const done = () => {
    queryClient.clear();
    const next = params.get('next');
    navigate(next && next.startsWith(props.home) && !next.startsWith('//') ? next : props.home);
  };
  const attempt = (work: () => Promise<unknown>) => async (event?: FormEvent) => {
    event?.preventDefault();
    setBusy(true);
    setError(null);
    try {
      await work();
      done();
    } catch (e) {
      setError(e);
    } finally {
      setBusy(false);
    }
  };
  const submit = attempt(() => props.signIn(username, password));

  return (
    <FormCard title="Sign in" subtitle={props.subtitle} onSubmit={submit}>
      <TextInput label="Username" withAsterisk={false} autoComplete="username" value={username} onChange={(e) => setUsername(e.currentTarget.value)} required autoFocus />
      <PasswordInput label="Password" withAsterisk={false} autoComplete="current-password" value={password} onChange={(e) => setPassword(e.currentTarget.value)} required />
      <ErrorText error={error} />
      <Button type="submit" loading={busy} fullWidth>
        Sign in
      </Button>
      <Button variant="default" fullWidth disabled={busy} onClick={() => void attempt(props.passkey)()}>
        Sign in with a passkey
      </Button>
      {props.children}
    </FormCard>
  );
}
