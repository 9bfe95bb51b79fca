/** Says, at the top of every run, which database backends the API tests ran against. */
export default function announceBackends(): void {
  // Each project runs the global setup; say it once.
  if (process.env.LICENSOR_BACKENDS_ANNOUNCED) return;
  process.env.LICENSOR_BACKENDS_ANNOUNCED = '1';
  const url = process.env.TEST_DATABASE_URL;
  process.stdout.write(
    url
      ? 'API tests run on: sqlite, postgres (TEST_DATABASE_URL)\n'
      : 'API tests run on: sqlite only (set TEST_DATABASE_URL to a fresh PostgreSQL database to add postgres)\n',
  );
}
