import { Anchor } from '@mantine/core';
import { useParams } from 'react-router';
import { signIn } from '../api/session';
import { SignInForm } from '../components/sign-in-form';

export default function SignIn() {
  const { slug = '' } = useParams();
  const by = signIn(slug);
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
    >
      <Anchor href="/" size="sm" ta="center">
        Another organisation
      </Anchor>
    </SignInForm>
  );
}
