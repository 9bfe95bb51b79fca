import { Alert, Button, Group, Stack, Text, Textarea } from '@mantine/core';
import { useState } from 'react';
import type { Action } from '../api/action';
import { ApiError, inWords } from '../api/client';
import { CopyBox, DateTime, download } from './display';
import { ModalForm } from './modal-form';

export interface AirGapActivation {
  machineId: number;
  activationId: string;
  until: string;
  response: string;
}

export interface AirGapDeactivation {
  machineId: number;
  releasedAt: string | null;
  released: boolean;
}

/**
 * What went wrong, in words a customer understands (DESIGN.md 14): the service's own text names
 * the field for a developer; a person at a ship's computer needs to know what to do next.
 */
function activationProblem(error: unknown): string {
  if (!(error instanceof ApiError)) return error instanceof Error ? error.message : String(error);
  if (error.status === 403 && error.reason === 'SEATS_FULL') return 'Every machine this licence allows is already activated. Deactivate or release one first.';
  if (error.status === 403 && error.reason === 'REVOKED') return 'This licence has been revoked, so no machine can be activated with it.';
  if (error.status === 403 && error.reason === 'EXPIRED') return 'This licence has expired, so no machine can be activated with it.';
  if (error.status === 403 && error.reason === 'NOT_YET_VALID') return 'This licence has not started yet. Try again on or after its start date.';
  if (error.status === 409) return 'This request has already been used. Make a new request on the machine and paste that one.';
  if (error.status === 400) {
    if (error.message.includes('signature does not verify'))
      return 'This request has been changed or mistyped. Compare it with the machine’s screen, or make a new one there.';
    if (error.message.includes('more than 7 days'))
      return 'This request is more than 7 days old (or the machine’s clock is wrong). Make a new request on the machine.';
    if (error.message.includes('made for licence')) return 'This request was made for another licence. Paste it on that licence’s page.';
    if (error.message.includes('off for this')) return 'Activating machines without internet is not offered for this product. Ask your vendor.';
    if (error.message.includes('OFFLINE licence')) return 'This licence works without activation: copy the licence file to the machine instead.';
    return 'This is not an activation request. Copy the whole text the machine shows, from “SVCA1” to the end.';
  }
  return inWords(error.message);
}

function deactivationProblem(error: unknown): string {
  if (!(error instanceof ApiError)) return error instanceof Error ? error.message : String(error);
  if (error.status === 403) return 'This licence has used all its self-service releases for these 30 days. Ask your vendor to free the machine.';
  if (error.status === 400) {
    if (error.message.includes('made for licence')) return 'This code was made for another licence. Paste it on that licence’s page.';
    if (error.message.includes('does not verify'))
      return 'This code has been changed or mistyped, or it comes from another machine. Compare it with the machine’s screen.';
    return 'This is not a deactivation code. Copy the whole text the machine shows, from “SVCD1” to the end.';
  }
  return inWords(error.message);
}

/** A refusal in a customer's words, in place of the service's. */
const worded = <A, R>(action: Action<A, R>, problemOf: (error: unknown) => string): Action<A, R> => ({
  ...action,
  error: action.error ? new Error(problemOf(action.error)) : null,
});

/**
 * `Activate an air-gapped computer` and `Deactivate an air-gapped computer` (DESIGN.md 14), for
 * the licence page and the portal: paste what the machine shows, then carry back the response.
 */
export function AirGapActions(props: {
  subject: string;
  disabled?: boolean;
  activate: Action<string, AirGapActivation>;
  deactivate: Action<string, AirGapDeactivation>;
}) {
  const [opened, setOpened] = useState<'activate' | 'deactivate' | null>(null);
  const open = (which: 'activate' | 'deactivate') => {
    props[which].reset();
    setOpened(which);
  };
  return (
    <>
      <Group gap="xs">
        <Button variant="default" size="xs" disabled={props.disabled} onClick={() => open('activate')}>
          Activate an air-gapped computer
        </Button>
        <Button variant="default" size="xs" disabled={props.disabled} onClick={() => open('deactivate')}>
          Deactivate an air-gapped computer
        </Button>
      </Group>
      {opened === 'activate' && <Activate subject={props.subject} action={worded(props.activate, activationProblem)} onClose={() => setOpened(null)} />}
      {opened === 'deactivate' && <Deactivate action={worded(props.deactivate, deactivationProblem)} onClose={() => setOpened(null)} />}
    </>
  );
}

function Activate(props: { subject: string; action: Action<string, AirGapActivation>; onClose: () => void }) {
  const [request, setRequest] = useState('');
  const [answer, setAnswer] = useState<AirGapActivation | null>(null);
  const send = async () => {
    const done = await props.action.run(request.trim());
    if (done) setAnswer(done.value);
    return done;
  };
  const done = answer && (
    <Stack>
      <Text size="sm">
        Type or paste this response on the machine. It works there until <DateTime value={answer.until} /> and on no other machine.
      </Text>
      <CopyBox value={answer.response} label="Activation response" />
      <Group justify="flex-end">
        <Button variant="default" onClick={() => download(answer.response, `activation-${props.subject}-${answer.activationId}.txt`, 'text/plain')}>
          Download
        </Button>
        <Button onClick={props.onClose}>Done</Button>
      </Group>
    </Stack>
  );
  return (
    <ModalForm
      title="Activate an air-gapped computer"
      submit="Activate"
      size="lg"
      onClose={props.onClose}
      action={props.action}
      failed="Not activated"
      onSubmit={send}
      disabled={request.trim() === ''}
      done={done || undefined}
      stayOpen
    >
      <Text size="sm">
        On the machine without internet, choose to activate the licence. It shows a request starting with “SVCA1”: paste it here (spaces and line breaks do not
        matter).
      </Text>
      <Textarea
        label="Activation request"
        autosize
        minRows={4}
        maxRows={10}
        value={request}
        onChange={(e) => setRequest(e.currentTarget.value)}
        styles={{ input: { fontFamily: 'monospace' } }}
      />
    </ModalForm>
  );
}

function Deactivate(props: { action: Action<string, AirGapDeactivation>; onClose: () => void }) {
  const [code, setCode] = useState('');
  const [answer, setAnswer] = useState<AirGapDeactivation | null>(null);
  const send = async () => {
    const done = await props.action.run(code.trim());
    if (done) setAnswer(done.value);
    return done;
  };
  const done = answer && (
    <Stack>
      <Alert color={answer.released ? 'green' : 'blue'} variant="light" role="status" title={answer.released ? 'Seat released' : 'Deactivated'}>
        {answer.released
          ? `Machine ${answer.machineId} is deactivated and its seat is free: the licence can be activated on another machine.`
          : `The air-gapped activation has ended. Machine ${answer.machineId} keeps its seat, because it has also checked in online or is named in the licence; release it separately if it should stop.`}
      </Alert>
      <Group justify="flex-end">
        <Button onClick={props.onClose}>Done</Button>
      </Group>
    </Stack>
  );
  return (
    <ModalForm
      title="Deactivate an air-gapped computer"
      submit="Deactivate"
      size="lg"
      onClose={props.onClose}
      action={props.action}
      failed="Not deactivated"
      onSubmit={send}
      disabled={code.trim() === ''}
      done={done || undefined}
      stayOpen
    >
      <Text size="sm">
        On the machine, choose to deactivate the licence. It stops using it there and shows a code starting with “SVCD1”: paste it here to free its seat.
      </Text>
      <Textarea
        label="Deactivation code"
        autosize
        minRows={3}
        maxRows={8}
        value={code}
        onChange={(e) => setCode(e.currentTarget.value)}
        styles={{ input: { fontFamily: 'monospace' } }}
      />
    </ModalForm>
  );
}
