import { useMutation, useQueryClient, type QueryKey } from '@tanstack/react-query';
import { currentSlug } from './client';

/** Query keys start with the slug, so two organisations never share cached answers. */
export const key = (...parts: unknown[]): QueryKey => [currentSlug(), ...parts];

/** A write as a page runs it: busy while it runs, its refusal kept to show where it happened. */
export interface Action<A = void, R = unknown> {
  /** Runs it: its answer, or null when refused (the refusal is then `error`). */
  run: (arg: A) => Promise<{ value: R } | null>;
  busy: boolean;
  error: unknown;
  reset: () => void;
}

/**
 * The one way a write runs: `work`, then every query it changed refetched (`invalidates`, said
 * once by the resource's hook) before the action counts as done, so what follows sees the change.
 */
export function useAction<A = void, R = unknown>(
  work: (arg: A) => Promise<R>,
  invalidates: QueryKey[] | ((result: R, arg: A) => QueryKey[]) = [],
): Action<A, R> {
  const queryClient = useQueryClient();
  const mutation = useMutation({
    mutationFn: work,
    onSuccess: (result, arg) =>
      Promise.all((typeof invalidates === 'function' ? invalidates(result, arg) : invalidates).map((queryKey) => queryClient.invalidateQueries({ queryKey }))),
  });
  return {
    run: (arg) =>
      mutation.mutateAsync(arg).then(
        (value) => ({ value }),
        () => null,
      ),
    busy: mutation.isPending,
    error: mutation.error,
    reset: mutation.reset,
  };
}

/** An action with its argument given (a row's), for a button that runs it as it is. */
export const bound = <A, R>(action: Action<A, R>, arg: A): Action<void, R> => ({ ...action, run: () => action.run(arg) });
