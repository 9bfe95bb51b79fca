import { startAuthentication, type PublicKeyCredentialRequestOptionsJSON } from '@simplewebauthn/browser';
import { platformApi } from '../api/platform';
import { unwrap } from '../api/client';
import { SignInForm } from '../components/sign-in-form';

async function passkey() {
  const options = (await unwrap(platformApi.POST('/platform/api/auth/passkey/options'))) as unknown as PublicKeyCredentialRequestOptionsJSON;
  const response = await startAuthentication({ optionsJSON: options });
  await unwrap(platformApi.POST('/platform/api/auth/passkey/login', { body: { response: response as never } }));
}

export default function PlatformSignIn() {
  return (
    <SignInForm
      subtitle="to the Licensor control plane"
      home="/platform/"
      signIn={(username, password) => unwrap(platformApi.POST('/platform/api/auth/login', { body: { username, password } }))}
      passkey={passkey}
    />
  );
}
