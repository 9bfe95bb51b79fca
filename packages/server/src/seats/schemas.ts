import { Type } from 'typebox';
import { Nullable, NullableTimestamp, Timestamp } from '../core/schemas.js';

export const MachineBinding = Type.Object({
  id: Type.Integer(),
  parts: Type.Record(Type.String(), Type.String(), { description: 'Truncated hashes, never raw values.' }),
  boundAt: Timestamp,
  releasedAt: NullableTimestamp,
  releasedBy: Nullable(Type.String()),
  live: Type.Boolean(),
  atIssue: Type.Boolean(),
  label: Nullable(Type.String({ description: 'The name the application sent with its checks (`machineLabel`), if any.' })),
  lastSeenAt: Nullable(Type.String({ format: 'date-time', description: 'Its last valid check (stamped at most once a minute).' })),
  airGapped: Type.Boolean({ description: 'True while an air-gapped activation (DESIGN.md 14) holds this seat.' }),
  activationId: Nullable(Type.String({ description: 'That activation’s id (the `aid` of its response).' })),
  until: NullableTimestamp,
  leaseEndsAt: Nullable(
    Type.String({
      format: 'date-time',
      description:
        "FLOATING: when this lease ends (or ended) unless renewed. A node-locked seat: an air-gapped activation's seat ends by itself then (as `until`), otherwise null.",
    }),
  ),
  borrowedUntil: Nullable(
    Type.String({
      format: 'date-time',
      description: 'FLOATING: the end of a borrow. Until then the application works offline, even after an operator frees the seat.',
    }),
  ),
});

export const LeasePeak = Type.Object({
  date: Type.String({ description: 'A UTC day, YYYY-MM-DD.' }),
  peak: Type.Integer({ description: 'The most live leases seen at once that day.' }),
});
