import '@mantine/core/styles.css';
import { Alert, Badge, createTheme, DataList, FileInput, MantineProvider, type CSSVariablesResolver } from '@mantine/core';
import { QueryClient, QueryClientProvider } from '@tanstack/react-query';
import { StrictMode } from 'react';
import { createRoot } from 'react-dom/client';
import { RouterProvider } from 'react-router';
import { ApiError } from './api/client';
import { router } from './router';

const theme = createTheme({
  primaryColor: 'indigo',
  primaryShade: { light: 8, dark: 8 },
  defaultRadius: 'md',
  fontFamily: 'system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif',
  // A yellow or orange title on its light background falls short of WCAG AA; the icon colour carries the tone.
  components: {
    Alert: Alert.extend({ styles: { title: { color: 'var(--mantine-color-text)' } } }),
    // A badge clips its word to an ellipsis when a table squeezes it ("A…"): a badge is one short
    // word, never narrower than that word.
    Badge: Badge.extend({
      styles: { root: { minWidth: 'max-content' } },
      // Gray's own dot vanishes on the dark theme's badge; a mid gray shows on both.
      vars: (_theme, props) => ({ root: props.variant === 'dot' && props.color === 'gray' ? { '--badge-dot-color': 'var(--mantine-color-gray-6)' } : {} }),
    }),
    // A file input's placeholder is text on the page, not an input's placeholder: it must meet contrast like any text.
    FileInput: FileInput.extend({ styles: { placeholder: { color: 'var(--mantine-color-dimmed)' } } }),
    // Labelled lines (a phone's record cards, the verdict): every value starts at the same place,
    // a long label wraps, a long value breaks rather than widening the card.
    DataList: DataList.extend({ styles: { itemLabel: { flex: '0 0 var(--data-list-label-width)' }, itemValue: { minWidth: 0, overflowWrap: 'anywhere' } } }),
  },
});

// Secondary text and a field's error message dark (or light) enough for WCAG AA contrast on both themes.
const contrast: CSSVariablesResolver = () => ({
  variables: {},
  light: { '--mantine-color-dimmed': 'var(--mantine-color-gray-7)', '--mantine-color-error': 'var(--mantine-color-red-8)' },
  dark: { '--mantine-color-dimmed': 'var(--mantine-color-dark-1)', '--mantine-color-error': 'var(--mantine-color-red-4)' },
});

/**
 * Every write refreshes what it changed with invalidateQueries. TanStack Query answers a refetch of
 * a query still on its first load with that load, which began before the write and so misses it
 * (a new portal link missing from the list it was added to). Cancelling first makes the refetch real.
 */
class RefreshingQueryClient extends QueryClient {
  override async invalidateQueries(...args: Parameters<QueryClient['invalidateQueries']>) {
    await this.cancelQueries(args[0]);
    return super.invalidateQueries(...args);
  }
}

const queryClient = new RefreshingQueryClient({
  defaultOptions: {
    // A refusal (4xx) will not change by asking again.
    queries: { retry: (count, error) => !(error instanceof ApiError && error.status < 500) && count < 2, refetchOnWindowFocus: false },
  },
});

createRoot(document.getElementById('root')!).render(
  <StrictMode>
    <MantineProvider theme={theme} defaultColorScheme="auto" cssVariablesResolver={contrast}>
      <QueryClientProvider client={queryClient}>
        <RouterProvider router={router} />
      </QueryClientProvider>
    </MantineProvider>
  </StrictMode>,
);
