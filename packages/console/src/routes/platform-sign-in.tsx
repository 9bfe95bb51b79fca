import { platformSignIn } from '../api/platform';
import { SignInForm } from '../components/sign-in-form';

export default function PlatformSignIn() {
  return <SignInForm subtitle="to the Licensor control plane" home="/platform/" signIn={platformSignIn.password} passkey={platformSignIn.passkey} />;
}
