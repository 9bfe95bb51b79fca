import { Button, TextInput } from '@mantine/core';
import { useState, type FormEvent } from 'react';
import { FormCard } from '../components/form-card';
import { useProblems } from '../components/modal-form';

/** `/`: asks for the organisation, remembering the last one, and goes to its console. */
export default function Chooser() {
  const [slug, setSlug] = useState(() => localStorage.getItem('licensor.lastSlug') ?? 'default');
  const problems = useProblems({ slug: !slug.trim() && 'Enter the organisation’s short name' });
  const submit = (event: FormEvent) => {
    event.preventDefault();
    if (!problems.check()) return;
    const chosen = slug.trim().toLowerCase();
    localStorage.setItem('licensor.lastSlug', chosen);
    window.location.assign(`/o/${encodeURIComponent(chosen)}/`);
  };
  return (
    <FormCard title="Licensor" subtitle="Which organisation do you work in?" onSubmit={submit}>
      <TextInput
        label="Organisation"
        description="Its short name, as in /o/name/"
        value={slug}
        onChange={(e) => setSlug(e.currentTarget.value)}
        required
        error={problems.of('slug')}
      />
      <Button type="submit" fullWidth>
        Continue
      </Button>
    </FormCard>
  );
}
