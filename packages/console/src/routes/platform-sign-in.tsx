import { platformApi } from '../api/platform';
import { unwrap } from '../api/client';
import { SignInForm } from '../components/sign-in-form';

export default function PlatformSignIn() {
  return (
    <SignInForm
      subtitle="to the Licensor control plane"
      home="/platform/"
      signIn={(username, password) => unwrap(platformApi.POST('/platform/api/auth/login', { body: { username, password } }))}
    />
  );
}
