import { Alert, Anchor, Button } from '@mantine/core';
import { useParams, useSearchParams } from 'react-router';
import { signIn } from '../api/session';
import { SSO_ERRORS, useSignInMethods } from '../api/sso';
import { SignInForm } from '../components/sign-in-form';

export default function SignIn() {
  const { slug = '' } = useParams();
  const [params] = useSearchParams();
  const by = signIn(slug);
  const sso = useSignInMethods(slug).data?.sso ?? null;
  const error = params.get('ssoError');
  // Back to the page a 401 came from, as a password sign-in goes (only a path of this organisation).
  const next = params.get('next');
  const returnTo =
    next?.startsWith(`/o/${slug}/`) && !next.startsWith(`/o/${slug}/api/`) && !next.includes('//') ? `?returnTo=${encodeURIComponent(next)}` : '';
  const first = (
    <>
      {error && (
        <Alert color="red" variant="light" title="Not signed in" role="alert">
          {SSO_ERRORS[error] ?? 'Single sign-on did not sign you in.'}
        </Alert>
      )}
      {sso && (
        <Button component="a" href={`${sso.startUrl}${returnTo}`} fullWidth>
          Sign in with {sso.displayName}
        </Button>
      )}
    </>
  );
  return (
    <SignInForm
      subtitle={
        <>
          to Licensor · organisation <b>{slug}</b>
        </>
      }
      home={`/o/${slug}/`}
      signIn={by.password}
      passkey={by.passkey}
      first={sso || error ? first : undefined}
      passwordBehind={sso?.enforced === true}
    >
      <Anchor href="/" size="sm" ta="center">
        Another organisation
      </Anchor>
    </SignInForm>
  );
}
