import { Alert, Button, Divider, PasswordInput, Text, TextInput } from '@mantine/core';
import { useQueryClient } from '@tanstack/react-query';
import { startAuthentication, type PublicKeyCredentialRequestOptionsJSON } from '@simplewebauthn/browser';
import { useState, type FormEvent, type ReactNode } from 'react';
import { useNavigate, useSearchParams } from 'react-router';
import { useAction } from '../api/action';
import type { PasskeyAssertion } from '../api/session';
import { ErrorText } from './feedback';
import { FormCard } from './form-card';
import { useProblems } from './modal-form';

/**
 * The sign-in form of an organisation or of the control plane: after signing in, back to the
 * page a 401 came from (`?next=`, only a path under `home`, never another site) or to `home`.
 * A session that ended (`?ended=1`, from the 401) is said so above the form.
 */
export function SignInForm(props: {
  subtitle: ReactNode;
  home: string;
  signIn: (username: string, password: string) => Promise<unknown>;
  /** A passkey sign-in (DESIGN.md 9): request options, let the browser sign, send the answer. */
  passkey: (sign: (options: PublicKeyCredentialRequestOptionsJSON) => Promise<PasskeyAssertion>) => Promise<unknown>;
  children?: ReactNode;
  /** Shown first: another way to sign in (single sign-on, DESIGN.md 21). */
  first?: ReactNode;
  /** Single sign-on is required: the password form waits behind a button, for break-glass administrators. */
  passwordBehind?: boolean;
}) {
  const [showPassword, setShowPassword] = useState(false);
  const [params] = useSearchParams();
  const navigate = useNavigate();
  const queryClient = useQueryClient();
  const [username, setUsername] = useState('');
  const [password, setPassword] = useState('');
  const attempt = useAction((work: () => Promise<unknown>) => work());
  const problems = useProblems({ username: !username.trim() && 'Enter your username', password: !password && 'Enter your password' });

  const go = async (work: () => Promise<unknown>) => {
    if (!(await attempt.run(work))) return;
    queryClient.clear();
    const next = params.get('next');
    navigate(next?.startsWith(props.home) && !next.startsWith('//') ? next : props.home);
  };
  const submit = (event: FormEvent) => {
    event.preventDefault();
    if (problems.check()) void go(() => props.signIn(username, password));
  };
  // The browser signs the service's challenge with this device's passkey.
  const passkey = () => go(() => props.passkey(async (options) => (await startAuthentication({ optionsJSON: options })) as PasskeyAssertion));

  return (
    <FormCard title="Sign in" subtitle={props.subtitle} onSubmit={submit}>
      {params.get('ended') === '1' && !attempt.error && (
        <Alert color="blue" variant="light" role="status" title="Your session has ended">
          You were signed out, or your session expired. Sign in again to go back to where you were.
        </Alert>
      )}
      {props.first}
      {props.first && !props.passwordBehind && <Divider label="or" labelPosition="center" />}
      {props.passwordBehind && !showPassword ? (
        <>
          <Button variant="subtle" fullWidth onClick={() => setShowPassword(true)}>
            Use a password (break-glass)
          </Button>
          <Text size="xs" c="dimmed" ta="center">
            Single sign-on is required here: a password works only for break-glass administrators.
          </Text>
        </>
      ) : (
        <>
          <TextInput
            label="Username"
            withAsterisk={false}
            autoComplete="username"
            value={username}
            onChange={(e) => setUsername(e.currentTarget.value)}
            required
            error={problems.of('username')}
            autoFocus={!props.first}
          />
          <PasswordInput
            label="Password"
            withAsterisk={false}
            autoComplete="current-password"
            value={password}
            onChange={(e) => setPassword(e.currentTarget.value)}
            required
            error={problems.of('password')}
          />
          <ErrorText error={attempt.error} title="Not signed in" />
          <Button type="submit" loading={attempt.busy} fullWidth>
            Sign in
          </Button>
          <Button variant="default" fullWidth disabled={attempt.busy} onClick={() => void passkey()}>
            Sign in with a passkey
          </Button>
        </>
      )}
      {props.children}
    </FormCard>
  );
}
