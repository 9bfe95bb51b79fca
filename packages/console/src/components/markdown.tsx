import { Typography } from '@mantine/core';
import Markdown, { type Components } from 'react-markdown';

/** A note's headings sit under the page's own (h1, then the section's h2), no larger than the release's name above them. */
const heading = { fontSize: '1.05em', margin: '0.75em 0 0.25em' };
const HEADINGS: Components = {
  h1: ({ node: _, ...props }) => <h3 {...props} style={heading} />,
  h2: ({ node: _, ...props }) => <h4 {...props} style={heading} />,
  h3: ({ node: _, ...props }) => <h5 {...props} style={heading} />,
  h4: ({ node: _, ...props }) => <h6 {...props} style={heading} />,
};

/**
 * Release notes (DESIGN.md 20): markdown, never HTML. react-markdown builds React elements and,
 * without rehype-raw, never renders the text's HTML; its URL filter drops `javascript:` links.
 */
export function Notes({ text }: { text: string }) {
  return (
    <Typography style={{ overflowWrap: 'anywhere' }}>
      <Markdown skipHtml components={HEADINGS}>
        {text}
      </Markdown>
    </Typography>
  );
}
