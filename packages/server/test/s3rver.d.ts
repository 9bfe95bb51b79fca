// s3rver ships no types; the S3 tests use its constructor, run and close (api/artifacts-s3.test.ts).
declare module 's3rver' {
  export default class S3rver {
    constructor(options: Record<string, unknown>);
    run(): Promise<unknown>;
    close(): Promise<void>;
  }
}
