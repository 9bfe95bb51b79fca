import type { Config } from '../config.js';
import { ledgerCheckOf, ledgerKeyOf } from '../keys/keyring.js';
import { Hsm, TokenUnavailable } from '../keys/pkcs11.js';
import { unseal, UnsealError } from '../keys/sealing.js';
import { readBackup } from './file.js';

type Verdict = 'opens' | 'does not open' | 'absent';

export interface CheckResult {
  /** Each product with a key held here, as `slug/productKey`: whether its sealed private key opens. */
  products: Record<string, Verdict>;
  /** Each product whose key is on a PKCS#11 token: whether its sealed PIN opens ("absent": the token is not here to try it on). */
  pins: Record<string, Verdict>;
  /** Each product whose trials were ever on, as `slug/productKey/trial-ledger`: whether this master key derives the key its ledger was kept under (DESIGN.md 18). */
  trialLedgers: Record<string, Verdict>;
  /** Each webhook endpoint, as `slug:webhook/<id>` (DESIGN.md 17): whether its sealed signing secret opens. */
  webhookSecrets: Record<string, Verdict>;
  /** Each organisation's single sign-on client secret, as `slug:sso` (DESIGN.md 17 and 21). */
  ssoSecrets: Record<string, Verdict>;
  /** Each payment connection's signing secret, as `slug:integration/<name>` (DESIGN.md 22: the `:` no slug or product key holds). */
  integrationSecrets: Record<string, Verdict>;
  open: boolean;
}

/** A table's rows as objects, by the column names of its line in the file. */
const named = (columns: string[], row: unknown[]) => Object.fromEntries(columns.map((c, i) => [c, row[i]])) as Record<string, unknown>;

/**
 * `licensor restore FILE --check`: reads the whole file (its digest checked) and loads nothing; tries
 * each product's current sealed key, or PIN, and its trial ledger's check value with the configured master key.
 */
export async function checkBackup(file: string, masterKey: Buffer, pkcs11: Config['pkcs11']): Promise<CheckResult> {
  const hsm = pkcs11 && new Hsm(pkcs11.module, pkcs11.tokens);
  const slugs = new Map<unknown, string>();
  const products = new Map<unknown, string>();
  const result: CheckResult = { products: {}, pins: {}, trialLedgers: {}, webhookSecrets: {}, ssoSecrets: {}, integrationSecrets: {}, open: true };
  let table = '';
  let columns: string[] = [];
  for await (const line of readBackup(file, () => {})) {
    if (line.kind === 'table') {
      ({ table, columns } = line.table);
      continue;
    }
    for (const values of line.rows) {
      const row = named(columns, values);
      if (table === 'organisations') slugs.set(row.id, String(row.slug));
      else if (table === 'products') {
        const name = `${slugs.get(row.org_id)}/${String(row.product_key)}`;
        products.set(row.id, name);
        // Under another master key every ledger entry is unmatchable, so each machine could start a trial again.
        if (row.trial_check !== null && row.trial_check !== undefined) {
          const verdict = ledgerCheckOf(ledgerKeyOf(masterKey, Number(row.id))) === row.trial_check ? 'opens' : 'does not open';
          result.trialLedgers[`${name}/trial-ledger`] = verdict;
          if (verdict === 'does not open') result.open = false;
        }
      } else if (table === 'product_keys' && row.retired_at === null) {
        const name = products.get(row.product_id) ?? `product ${String(row.product_id)}`;
        const onToken = row.pkcs11_token !== null && row.pkcs11_token !== undefined;
        const verdict = await verdictOf(row, masterKey, onToken ? hsm : undefined);
        (onToken ? result.pins : result.products)[name] = verdict;
        if (verdict === 'does not open') result.open = false;
      } else if (table === 'webhook_endpoints') {
        // Sealed as webhooks/service.ts seals it: the context names the organisation and the endpoint.
        const verdict = opens(masterKey, row.secret, `webhook:${String(row.org_id)}:${String(row.id)}`);
        result.webhookSecrets[`${slugs.get(row.org_id)}:webhook/${String(row.id)}`] = verdict;
        if (verdict === 'does not open') result.open = false;
      } else if (table === 'sso_configs') {
        // Sealed as sso/config.ts seals it: the context names the organisation.
        const verdict = opens(masterKey, row.client_secret, `sso:${String(row.org_id)}`);
        result.ssoSecrets[`${slugs.get(row.org_id)}:sso`] = verdict;
        if (verdict === 'does not open') result.open = false;
      } else if (table === 'integrations') {
        // Sealed as integrations/service.ts seals it: the context names the organisation and the connection.
        const verdict = opens(masterKey, row.secret, `integration:${String(row.org_id)}:${String(row.id)}`);
        result.integrationSecrets[`${slugs.get(row.org_id)}:integration/${String(row.name)}`] = verdict;
        if (verdict === 'does not open') result.open = false;
      }
    }
  }
  return result;
}

function opens(masterKey: Buffer, sealed: unknown, context: string): Verdict {
  try {
    unseal(masterKey, String(sealed), context);
    return 'opens';
  } catch (err) {
    if (err instanceof UnsealError) return 'does not open';
    throw err;
  }
}

async function verdictOf(row: Record<string, unknown>, masterKey: Buffer, hsm: Hsm | null | undefined): Promise<Verdict> {
  const context = String(row.key_fingerprint);
  if (opens(masterKey, row.sealed_private_key, context) === 'does not open') return 'does not open';
  if (hsm === undefined) return 'opens';
  const secret = unseal(masterKey, String(row.sealed_private_key), context);
  if (hsm === null) return 'absent';
  try {
    await hsm.reach({ token: String(row.pkcs11_token), label: String(row.pkcs11_label), id: String(row.pkcs11_id) }, secret.toString('utf8'));
    return 'opens';
  } catch (err) {
    if (!(err instanceof TokenUnavailable)) throw err;
    // The token is here and refuses the PIN: it does not open the key; otherwise the token is not here to say.
    return err.field === 'pin' ? 'does not open' : 'absent';
  }
}
