import { Button, TextInput } from '@mantine/core';
import { FormCard } from '../components/form-card';
import { useState, type FormEvent } from 'react';

/** `/`: asks for the organisation, remembering the last one, and goes to its console. */
export default function Chooser() {
  const [slug, setSlug] = useState(() => localStorage.getItem('licensor.lastSlug') ?? 'default');
  const submit = (event: FormEvent) => {
    event.preventDefault();
    const chosen = slug.trim().toLowerCase();
    localStorage.setItem('licensor.lastSlug', chosen);
    window.location.assign(`/o/${encodeURIComponent(chosen)}/`);
  };
  return (
    <FormCard title="Licensor" subtitle="Which organisation do you work in?" onSubmit={submit}>
      <TextInput label="Organisation" description="Its short name, as in /o/name/" value={slug} onChange={(e) => setSlug(e.currentTarget.value)} required />
      <Button type="submit" fullWidth>
        Continue
      </Button>
    </FormCard>
  );
}
