import { Alert, Button, Group, Modal, Stack, Text, Textarea } from '@mantine/core';
import { useState } from 'react';
import { ApiError } from '../api/client';
import { CopyBox, DateTime, download } from './display';

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
  if (error.status === 403 && error.reason === 'SEATS_FULL') return 'Every computer this licence allows is already activated. Deactivate or release one first.';
  if (error.status === 403 && error.reason === 'REVOKED') return 'This licence has been revoked, so no computer can be activated with it.';
  if (error.status === 403 && error.reason === 'EXPIRED') return 'This licence has expired, so no computer can be activated with it.';
  if (error.status === 403 && error.reason === 'NOT_YET_VALID') return 'This licence has not started yet. Try again on or after its start date.';
  if (error.status === 409) return 'This request has already been used. Make a new request on the computer and paste that one.';
  if (error.status === 400) {
    if (error.message.includes('signature does not verify')) return 'This request has been changed or mistyped. Compare it with the computer’s screen, or make a new one there.';
    if (error.message.includes('more than 7 days')) return 'This request is more than 7 days old (or the computer’s clock is wrong). Make a new request on the computer.';
    if (error.message.includes('made for licence')) return 'This request was made for another licence. Paste it on that licence’s page.';
    if (error.message.includes('off for this')) return 'Activating computers without internet is not offered for this product. Ask your vendor.';
    if (error.message.includes('OFFLINE licence')) return 'This licence works without activation: copy the licence file to the computer instead.';
    return 'This is not an activation request. Copy the whole text the computer shows, from “SVCA1” to the end.';
  }
  return error.message;
}

function deactivationProblem(error: unknown): string {
  if (!(error instanceof ApiError)) return error instanceof Error ? error.message : String(error);
  if (error.status === 403) return 'This licence has used all its self-service releases for these 30 days. Ask your vendor to free the computer.';
  if (error.status === 400) {
    if (error.message.includes('made for licence')) return 'This code was made for another licence. Paste it on that licence’s page.';
    if (error.message.includes('does not verify')) return 'This code has been changed or mistyped, or it comes from another computer. Compare it with the computer’s screen.';
    return 'This is not a deactivation code. Copy the whole text the computer shows, from “SVCD1” to the end.';
  }
  return error.message;
}

/**
 * `Activate an air-gapped computer` and `Deactivate an air-gapped computer` (DESIGN.md 14), for
 * the licence page and the portal: paste what the computer shows, then carry back the response.
 */
export function AirGapActions(props: {
  subject: string;
  disabled?: boolean;
  activate: (request: string) => Promise<AirGapActivation>;
  deactivate: (code: string) => Promise<AirGapDeactivation>;
  onDone: () => Promise<unknown>;
}) {
  const [opened, setOpened] = useState<'activate' | 'deactivate' | null>(null);
  return (
    <>
      <Group gap="xs">
        <Button variant="default" size="xs" disabled={props.disabled} onClick={() => setOpened('activate')}>
          Activate an air-gapped computer
        </Button>
        <Button variant="default" size="xs" disabled={props.disabled} onClick={() => setOpened('deactivate')}>
          Deactivate an air-gapped computer
        </Button>
      </Group>
      <Modal closeButtonProps={{ 'aria-label': 'Close' }} opened={opened === 'activate'} onClose={() => setOpened(null)} title="Activate an air-gapped computer" size="lg">
        <Activate subject={props.subject} activate={props.activate} onDone={props.onDone} onClose={() => setOpened(null)} />
      </Modal>
      <Modal closeButtonProps={{ 'aria-label': 'Close' }} opened={opened === 'deactivate'} onClose={() => setOpened(null)} title="Deactivate an air-gapped computer" size="lg">
        <Deactivate deactivate={props.deactivate} onDone={props.onDone} onClose={() => setOpened(null)} />
      </Modal>
    </>
  );
}

/** A pasted text sent once (trimmed), its answer kept, or the refusal in a customer's words. */
function usePasted<T>(send: (text: string) => Promise<T>, problemOf: (error: unknown) => string, onDone: () => Promise<unknown>) {
  const [text, setText] = useState('');
  const [answer, setAnswer] = useState<T | null>(null);
  const [problem, setProblem] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const submit = async () => {
    setBusy(true);
    setProblem(null);
    try {
      setAnswer(await send(text.trim()));
      await onDone();
    } catch (error) {
      setProblem(problemOf(error));
    } finally {
      setBusy(false);
    }
  };
  return { text, setText, answer, problem, busy, submit };
}

function Activate(props: { subject: string; activate: (request: string) => Promise<AirGapActivation>; onDone: () => Promise<unknown>; onClose: () => void }) {
  const { text: request, setText: setRequest, answer, problem, busy, submit } = usePasted(props.activate, activationProblem, props.onDone);
  if (answer) {
    return (
      <Stack>
        <Text size="sm">
          Type or paste this response on the computer. It works there until <DateTime value={answer.until} /> and on no other computer.
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
  }
  return (
    <Stack>
      <Text size="sm">
        On the computer without internet, choose to activate the licence. It shows a request starting with “SVCA1”: paste it here (spaces and line breaks do not matter).
      </Text>
      <Textarea label="Activation request" autosize minRows={4} maxRows={10} value={request} onChange={(e) => setRequest(e.currentTarget.value)} styles={{ input: { fontFamily: 'monospace' } }} />
      {problem && (
        <Alert color="red" variant="light" role="alert" title="Not activated">
          {problem}
        </Alert>
      )}
      <Group justify="flex-end">
        <Button variant="default" onClick={props.onClose}>
          Cancel
        </Button>
        <Button loading={busy} disabled={request.trim() === ''} onClick={submit}>
          Activate
        </Button>
      </Group>
    </Stack>
  );
}

function Deactivate(props: { deactivate: (code: string) => Promise<AirGapDeactivation>; onDone: () => Promise<unknown>; onClose: () => void }) {
  const { text: code, setText: setCode, answer, problem, busy, submit } = usePasted(props.deactivate, deactivationProblem, props.onDone);
  if (answer) {
    return (
      <Stack>
        <Alert color={answer.released ? 'green' : 'blue'} variant="light" role="status" title={answer.released ? 'Seat released' : 'Deactivated'}>
          {answer.released
            ? `Computer ${answer.machineId} is deactivated and its seat is free: the licence can be activated on another computer.`
            : `The air-gapped activation has ended. Computer ${answer.machineId} keeps its seat, because it has also checked in online or is named in the licence; release it separately if it should stop.`}
        </Alert>
        <Group justify="flex-end">
          <Button onClick={props.onClose}>Done</Button>
        </Group>
      </Stack>
    );
  }
  return (
    <Stack>
      <Text size="sm">
        On the computer, choose to deactivate the licence. It stops using it there and shows a code starting with “SVCD1”: paste it here to free its seat.
      </Text>
      <Textarea label="Deactivation code" autosize minRows={3} maxRows={8} value={code} onChange={(e) => setCode(e.currentTarget.value)} styles={{ input: { fontFamily: 'monospace' } }} />
      {problem && (
        <Alert color="red" variant="light" role="alert" title="Not deactivated">
          {problem}
        </Alert>
      )}
      <Group justify="flex-end">
        <Button variant="default" onClick={props.onClose}>
          Cancel
        </Button>
        <Button loading={busy} disabled={code.trim() === ''} onClick={submit}>
          Deactivate
        </Button>
      </Group>
    </Stack>
  );
}
