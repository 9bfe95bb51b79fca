import { Anchor } from '@mantine/core';
import { useParams } from 'react-router';
import { api, unwrap } from '../api/client';
import { SignInForm } from '../components/sign-in-form';

export default function SignIn() {
  const { slug = '' } = useParams();
  const signIn = async (username: string, password: string) => {
    await unwrap(api(slug).POST('/auth/login', { body: { username, password } }));
    localStorage.setItem('licensor.lastSlug', slug);
  };
  return (
    <SignInForm
      subtitle={
        <>
          to Licensor · organisation <b>{slug}</b>
        </>
      }
      home={`/o/${slug}/`}
      signIn={signIn}
    >
      <Anchor href="/" size="sm" ta="center">
        Another organisation
      </Anchor>
    </SignInForm>
  );
}
