import { ALGORITHMS, ALGORITHM_INFO, CLAIM_NAMES, FEATURE_CLAIM_NAMES, FLOATING_CLAIM_NAMES } from '@licensor/protocol';
import { recordAudit } from '../audit/audit.js';
import { newPublicId, newSecret, sha256Hex } from '../core/secrets.js';
import { isUniqueViolation } from '../db/database.js';
import type { Tenant } from '../db/tenant.js';
import type { Ctx } from '../core/context.js';
import { inTransaction } from '../core/transaction.js';
import { conflict, notFound } from '../core/errors.js';
import { iso } from '../core/schemas.js';
import type { Keyring, ProductKeyRow } from '../keys/keyring.js';
import type { Hsm } from '../keys/pkcs11.js';
import { prepareKeyChange, withoutEchoes, type KeyChange } from './key-change.js';
import {
  mappingIntegrations,
  countLicences,
  countReleases,
  currentKeyRows,
  deleteProductRows,
  findProductRow,
  insertKeyRow,
  insertProductRow,
  keyRowsOf,
  listProductRows,
  productData,
  retireKey,
  setCheckToken,
  toKeyRecord,
  toProduct,
  updateKeyRow,
  updateProductAt,
} from './repo.js';
import type { CreateProductInput, UpdateProductInput } from './schemas.js';
import { changedFields, nextShape, shapeColumns, shapeOf } from './shape.js';

async function loadProduct(t: Tenant, id: number) {
  const product = await findProductRow(t, id);
  if (!product) throw notFound(`no product ${id}`);
  return { product, key: (await currentKeyRows(t, [id])).get(id)! };
}

const licenceCount = async (t: Tenant, id: number) => (await countLicences(t, [id])).get(id) ?? 0;

const certificateColumns = (change: KeyChange) => ({
  certificate_pem: change.certificate?.pem ?? null,
  certificate_subject: change.certificate?.subject ?? null,
  certificate_expires_at: change.certificate?.expiresAt ?? null,
});

async function insertKey(t: Tenant, keyring: Keyring, productId: number, change: KeyChange, now: number) {
  return insertKeyRow(t, {
    product_id: productId,
    ...keyring.seal(change.pair!),
    ...certificateColumns(change),
    created_at: now,
    retired_at: null,
  });
}

/** Where a key on a token is, for the audit trail (never its PIN). */
const tokenDetails = (key: ProductKeyRow) => (key.pkcs11_token === null ? {} : { pkcs11: { tokenLabel: key.pkcs11_token, keyLabel: key.pkcs11_label } });

const productKeyTaken = (productKey: string) => conflict(`productKey "${productKey}" is already used by another product`);

export async function listProducts(ctx: Ctx, keyring: Keyring) {
  const rows = await listProductRows(ctx.tenant);
  const ids = rows.map((row) => row.id);
  const [keys, counts] = await Promise.all([currentKeyRows(ctx.tenant, ids), countLicences(ctx.tenant, ids)]);
  const errors = await Promise.all(rows.map((row) => keyring.keyError(keys.get(row.id)!, row.version)));
  return rows.map((row, i) => toProduct(row, keys.get(row.id)!, errors[i]!, counts.get(row.id) ?? 0, ctx.now));
}

export async function getProduct(ctx: Ctx, keyring: Keyring, id: number) {
  const { product, key } = await loadProduct(ctx.tenant, id);
  return toProduct(product, key, await keyring.keyError(key, product.version), await licenceCount(ctx.tenant, id), ctx.now);
}

export async function createProduct(ctx: Ctx, keyring: Keyring, body: CreateProductInput) {
  const input = withoutEchoes(body, null);
  const shape = nextShape(input, null);
  const change = await prepareKeyChange(
    input,
    null,
    keyring,
    { product: shape.name, productKey: shape.productKey, organisation: ctx.org.name, slug: ctx.org.slug },
    ctx.now,
  );
  try {
    return await inTransaction(ctx, async (t) => {
      const inserted = await insertProductRow(t, {
        ...shapeColumns(shape),
        algorithm: change.algorithm,
        key_origin: change.keyOrigin,
        certificate_type: change.certificateType,
        check_id: newPublicId(16),
        check_token_hash: null,
        check_rotated_at: null,
        created_at: ctx.now,
        created_by: ctx.actor.name,
        updated_at: ctx.now,
        version: 1,
      });
      // The ledger key is derived from the product id, known only once the row is in.
      const product =
        shape.trialDays > 0 ? (await updateProductAt(t, inserted.id, inserted.version, { trial_check: keyring.ledgerCheck(inserted.id) }))! : inserted;
      const key = await insertKey(t, keyring, product.id, change, ctx.now);
      await recordAudit(t, ctx, {
        action: 'product.created',
        subjectType: 'product',
        subjectId: product.id,
        event: () => productData(t, product.id, ctx.now),
        summary: `Created product ${product.name} (${product.product_key})`,
        details: {
          productKey: product.product_key,
          algorithm: change.algorithm,
          keyOrigin: change.keyOrigin,
          certificateType: change.certificateType,
          keyFingerprint: key.key_fingerprint,
          ...tokenDetails(key),
        },
      });
      return toProduct(product, key, keyring.open(key, product.version).error, 0, ctx.now);
    });
  } catch (err) {
    if (isUniqueViolation(err)) throw productKeyTaken(input.productKey);
    throw err;
  }
}

export async function updateProduct(ctx: Ctx, keyring: Keyring, id: number, body: UpdateProductInput) {
  const before = await loadProduct(ctx.tenant, id);
  const input = withoutEchoes(body, before);
  const beforeShape = shapeOf(before.product);
  const shape = nextShape(input, beforeShape);
  const change = await prepareKeyChange(
    input,
    before,
    keyring,
    { product: shape.name, productKey: shape.productKey, organisation: ctx.org.name, slug: ctx.org.slug },
    ctx.now,
  );
  const certificateChanged = change.pair === null && change.certificate !== undefined;
  const pinChanged = change.pin !== null && change.pin !== keyring.pinOf(before.key);
  const changed = [
    ...changedFields(beforeShape, shape),
    ...(change.algorithm !== before.product.algorithm ? ['algorithm'] : []),
    ...(certificateChanged ? ['certificate'] : []),
    ...(pinChanged ? ['pkcs11.pin'] : []),
  ];
  // Sending a record back as it is changes nothing, not even updatedAt.
  if (changed.length === 0 && change.pair === null) {
    return toProduct(before.product, before.key, await keyring.keyError(before.key, before.product.version), await licenceCount(ctx.tenant, id), ctx.now);
  }
  try {
    return await inTransaction(ctx, async (t) => {
      // The key and certificate were prepared against `before`: the write holds only while the
      // product is still at that version (any change raises it), else the edit is stale.
      const product = await updateProductAt(t, id, before.product.version, {
        ...shapeColumns(shape),
        algorithm: change.algorithm,
        key_origin: change.keyOrigin,
        certificate_type: change.certificateType,
        updated_at: ctx.now,
        version: before.product.version + 1,
        // Written once: the ledger outlives its trials being turned off, and a value kept from
        // another master key must still show at `restore --check` rather than be overwritten.
        ...(shape.trialDays > 0 && before.product.trial_check === null ? { trial_check: keyring.ledgerCheck(id) } : {}),
      });
      if (!product) throw conflict('the product changed while this edit was prepared: send it again');
      if (shape.productKey !== before.product.product_key && (await licenceCount(t, id)) > 0) {
        throw conflict('productKey: fixed once a licence of the product exists');
      }
      let key = before.key;
      if (change.pair) {
        // The old key is retired, not removed: it still verifies what it signed.
        await retireKey(t, before.key.id, ctx.now);
        key = await insertKey(t, keyring, id, change, ctx.now);
        await recordAudit(t, ctx, {
          action: 'product.key_rotated',
          subjectType: 'product',
          subjectId: id,
          event: () => productData(t, id, ctx.now),
          summary: `Replaced the signing key of ${product.name}`,
          details: {
            from: before.key.key_fingerprint,
            to: key.key_fingerprint,
            algorithm: change.algorithm,
            keyOrigin: change.keyOrigin,
            ...tokenDetails(key),
          },
        });
      } else if (change.certificate !== undefined || pinChanged) {
        key = await updateKeyRow(t, before.key.id, {
          ...(change.certificate === undefined ? {} : certificateColumns(change)),
          ...(pinChanged ? { sealed_private_key: keyring.sealPin(change.pin!, before.key.key_fingerprint) } : {}),
        });
      }
      if (changed.length > 0) {
        await recordAudit(t, ctx, {
          action: 'product.updated',
          subjectType: 'product',
          subjectId: id,
          event: () => productData(t, id, ctx.now),
          summary: `Updated product ${product.name}`,
          details: { changed },
        });
      }
      return toProduct(product, key, keyring.open(key, product.version).error, await licenceCount(t, id), ctx.now);
    });
  } catch (err) {
    if (isUniqueViolation(err)) throw productKeyTaken(shape.productKey);
    throw err;
  }
}

export async function deleteProduct(ctx: Ctx, id: number): Promise<void> {
  await inTransaction(ctx, async (t) => {
    const { product } = await loadProduct(t, id);
    if ((await licenceCount(t, id)) > 0) throw conflict('the product has licences: it cannot be deleted');
    if ((await countReleases(t, id)) > 0) throw conflict('the product has releases: it cannot be deleted');
    const integrations = await mappingIntegrations(t, id);
    if (integrations.length > 0) throw conflict(`the product is mapped by the integration ${integrations.join(', ')}: it cannot be deleted`);
    // Before the rows go: its webhook event carries the product.
    await recordAudit(t, ctx, {
      action: 'product.deleted',
      subjectType: 'product',
      subjectId: id,
      event: () => productData(t, id, ctx.now),
      summary: `Deleted product ${product.name} (${product.product_key})`,
      details: { productKey: product.product_key },
    });
    await deleteProductRows(t, id);
  });
}

/** A new check token, shown once; the previous one stops working when this commits. */
export async function rotateCheckToken(ctx: Ctx, id: number) {
  const secret = newSecret();
  return inTransaction(ctx, async (t) => {
    const product = await setCheckToken(t, id, sha256Hex(secret), ctx.now);
    if (!product) throw notFound(`no product ${id}`);
    await recordAudit(t, ctx, {
      action: 'product.check_token_rotated',
      subjectType: 'product',
      subjectId: id,
      event: () => productData(t, id, ctx.now),
      summary: `Rotated the check token of ${product.name}`,
    });
    return { checkId: product.check_id, checkToken: `svcc_${product.check_id}_${secret}`, rotatedAt: iso(ctx.now) };
  });
}

export async function listProductKeys(ctx: Ctx, id: number) {
  await loadProduct(ctx.tenant, id);
  return (await keyRowsOf(ctx.tenant, id)).map(toKeyRecord);
}

export async function publicKeyPem(ctx: Ctx, id: number): Promise<string> {
  return (await loadProduct(ctx.tenant, id)).key.public_key_pem;
}

export async function certificatePem(ctx: Ctx, id: number): Promise<string> {
  const { product, key } = await loadProduct(ctx.tenant, id);
  if (key.certificate_pem === null) throw notFound(`product ${product.id} has no certificate (certificateType ${product.certificate_type})`);
  return key.certificate_pem;
}

/** What an issue form needs: the types the product allows, its defaults and its parameters. */
export async function productForm(ctx: Ctx, id: number) {
  const shape = shapeOf((await loadProduct(ctx.tenant, id)).product);
  return {
    productId: id,
    licenceTypes: shape.allowedLicenceTypes,
    defaults: {
      licenceType: shape.licenceType,
      // The activation a HYBRID licence gets unless the issuer says otherwise (DESIGN.md 3).
      activation: shape.allowedLicenceTypes.includes('HYBRID') ? ('ONLINE' as const) : null,
      validityMonths: shape.defaultValidityMonths,
      graceDays: shape.defaultGraceDays,
      maxMachines: shape.maxMachines,
      updatesMonths: shape.updatesMonths,
    },
    params: shape.params,
    meters: shape.meters,
  };
}

const choice = (value: string, label: string) => ({ value, label, available: true });

/** What this deployment offers when a product is created or edited, for this organisation. */
export function productOptions(hsm: Hsm | null, slug: string, checkRateAddress: number) {
  const tokens = hsm?.tokensOf(slug) ?? [];
  const pkcs11Problem =
    hsm === null
      ? 'no PKCS#11 module is configured in this deployment (LICENSOR_PKCS11_MODULE)'
      : (hsm.unavailableReason ?? (tokens.length === 0 ? 'no PKCS#11 token is assigned to this organisation (LICENSOR_PKCS11_TOKENS)' : null));
  return {
    algorithms: ALGORITHMS.map((id) => ({
      value: id,
      label: ALGORITHM_INFO[id].label,
      signatureAlgorithm: ALGORITHM_INFO[id].signatureAlgorithm,
      available: true,
    })),
    certificateTypes: [
      choice('SELF_SIGNED', 'Self-signed X.509 certificate'),
      choice('NONE', 'No certificate'),
      choice('IMPORTED', 'Imported certificate (PEM)'),
    ],
    keyOrigins: [
      choice('managed', 'Generated and sealed by the service'),
      choice('imported', 'Imported private key (PEM or PKCS#12 keystore)'),
      {
        ...choice('pkcs11', 'Key kept on a hardware security module (PKCS#11)'),
        available: pkcs11Problem === null,
        ...(pkcs11Problem === null ? {} : { reason: pkcs11Problem }),
      },
    ],
    keyFormats: [choice('PEM', 'PEM private key (PKCS#8 or traditional, optionally encrypted)'), choice('PKCS12', 'PKCS#12 keystore (.p12, .pfx)')],
    pkcs11Tokens: pkcs11Problem === null ? [...tokens] : [],
    licenceTypes: [
      choice('OFFLINE', 'Offline: verified locally only'),
      choice('ONLINE', 'Online: checks in with the service'),
      choice('HYBRID', 'Hybrid: verified locally and checks in'),
    ],
    paramTypes: [
      choice('STRING', 'Text'),
      choice('INTEGER', 'Whole number'),
      choice('BOOLEAN', 'Yes / no'),
      choice('DATE', 'Date (YYYY-MM-DD)'),
      choice('STRING_LIST', 'List of texts'),
      choice('ENUM', 'One of a list'),
    ],
    // So a form can refuse these parameter keys before sending, as the API would.
    reservedParamKeys: [...CLAIM_NAMES, ...FEATURE_CLAIM_NAMES],
    reservedFloatingParamKeys: [...FLOATING_CLAIM_NAMES],
    seatModels: [
      choice('NODE_LOCKED', 'Node-locked: a seat is a machine, bound until released'),
      choice('FLOATING', 'Floating: a seat is a lease, free again when the application stops checking in'),
    ],
    meterPeriods: [
      choice('MONTH', 'Each calendar month'),
      choice('DAY', 'Each day'),
      choice('YEAR', 'Each calendar year'),
      choice('NONE', 'The licence’s whole life'),
    ],
    // The product form warns when a floating site behind one address would need more (DESIGN.md 13).
    checkRateAddress,
  };
}
