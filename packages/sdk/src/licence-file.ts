import { readFileSync } from 'node:fs';

/**
 * The licence string in a `.lic` file, without what an editor or a download puts around it: a
 * byte-order mark and surrounding spaces, tabs and line breaks. verifyLicence() itself stays
 * strict (a string with a trailing newline is MALFORMED), so read files through this.
 */
export function readLicenceFile(file: string): string {
  return readFileSync(file, 'utf8')
    .replace(/^\uFEFF/, '')
    .replace(/^[ \t\r\n\f\v]+|[ \t\r\n\f\v]+$/g, '');
}
