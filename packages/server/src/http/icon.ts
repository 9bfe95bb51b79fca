import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** The service's icon (a key), served at /favicon.ico: one 32×32 PNG inside an ICO. */
export const FAVICON_ICO = fs.readFileSync(path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../assets/favicon.ico'));
/** The same image as a PNG, for pages that take one (/docs): the ICO's 6-byte header and 16-byte entry come first. */
export const ICON_PNG = FAVICON_ICO.subarray(22);
