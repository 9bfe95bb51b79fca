import { Anchor } from '@mantine/core';
import { useParams } from 'react-router';
import { startAuthentication, type PublicKeyCredentialRequestOptionsJSON } from '@simplewebauthn/browser';
import { api, unwrap } from '../api/client';
import { SignInForm } from '../components/sign-in-form';

export default function SignIn() {
  const { slug = '' } = useParams();
  const signIn = async (username: string, password: string) => {
    await unwrap(api(slug).POST('/auth/login', { body: { username, password } }));
    localStorage.setItem('licensor.lastSlug', slug);
  };
  const passkey = async () => {
    const options = (await unwrap(api(slug).POST('/auth/passkey/options'))) as unknown as PublicKeyCredentialRequestOptionsJSON;
    const response = await startAuthentication({ optionsJSON: options });
    await unwrap(api(slug).POST('/auth/passkey/login', { body: { response: response as never } }));
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
      passkey={passkey}
    >
      <Anchor href="/" size="sm" ta="center">
        Another organisation
      </Anchor>
    </SignInForm>
  );
}
