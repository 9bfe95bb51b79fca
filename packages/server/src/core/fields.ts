/**
 * A field of a request body as a message names it (issue 45): in words for the person reading,
 * then as the API spells it for the developer and for DESIGN's "400 naming `meters[i].key`":
 * "Max offline seconds (maxOfflineSeconds)", "Meters item 1 overage (meters[0].overage)".
 */

/** Body fields whose words alone would mislead; every other camelCase name is split into words. */
const NAMES: Record<string, string> = {
  license: 'licence',
  params: 'parameters',
  keystorePkcs12: 'PKCS#12 keystore',
  privateKeyPem: 'PEM private key',
  certificatePem: 'PEM certificate',
  clientId: 'client ID',
};

const WORDS: Record<string, string> = {
  id: 'ID',
  pin: 'PIN',
  pem: 'PEM',
  url: 'URL',
  json: 'JSON',
  pkcs11: 'PKCS#11',
  pkcs12: 'PKCS#12',
  license: 'licence',
  licenses: 'licences',
};

/** One name in words: `maxOfflineSeconds` → "max offline seconds". */
export function words(name: string): string {
  return (
    NAMES[name] ??
    name
      .replace(/([a-z0-9])([A-Z])/g, '$1 $2')
      .replace(/([A-Z]+)([A-Z][a-z])/g, '$1 $2')
      .split(/[\s_]+/)
      .map((word) => WORDS[word.toLowerCase()] ?? word.toLowerCase())
      .join(' ')
  );
}

export const capitalised = (text: string) => text.charAt(0).toUpperCase() + text.slice(1);

/** A path's segments in words; a number is a list's item, counted from 1. */
export function fieldWords(segments: readonly string[]): string {
  return segments.map((segment) => (/^\d+$/.test(segment) ? `item ${Number(segment) + 1}` : words(segment))).join(' ');
}

/** A body path's segments as the API spells them: `meters[0].overage`, `trialParams.seats`. */
export function apiPath(segments: readonly string[]): string {
  return segments.map((segment, i) => (/^\d+$/.test(segment) ? `[${segment}]` : i === 0 ? segment : `.${segment}`)).join('');
}

/** A body field as a message begins: its words (or `label`), then its path, "Seats (params.seats)". */
export function fieldName(path: string, label?: string): string {
  return `${label ?? capitalised(fieldWords(path.replace(/\[(\d+)\]/g, '.$1').split('.')))} (${path})`;
}
