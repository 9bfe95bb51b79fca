// oidc-provider ships no types; the tests use a handful of its calls (sso-helpers.ts).
declare module 'oidc-provider';
