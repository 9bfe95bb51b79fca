import { readFileSync } from 'node:fs';

/** The release version, from the repository's package.json. */
export const VERSION: string = (JSON.parse(readFileSync(new URL('../../../package.json', import.meta.url), 'utf8')) as { version: string }).version;
