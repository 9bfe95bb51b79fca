/**
 * What JSON.parse lets through and a licence payload may not hold (DESIGN.md 16: every SDK parses
 * alike, and parsers differ exactly here): a key twice in one object (JavaScript keeps the last,
 * other parsers the first or an error), and a number that is not an integer literal within
 * ±(2^53 − 1) (`1.0` and `1e3` are integers to JavaScript, floats elsewhere). `text` is JSON
 * that JSON.parse accepted. Answers the problem, or null.
 */
export function strictJsonProblem(text: string): string | null {
  // One entry per open container: the keys seen in an object, null for an array.
  const open: Array<Set<string> | null> = [];
  let keyNext = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (c === '"') {
      let end = i + 1;
      while (text[end] !== '"') end += text[end] === '\\' ? 2 : 1;
      if (keyNext) {
        const keys = open[open.length - 1]!;
        const key = JSON.parse(text.slice(i, end + 1)) as string;
        if (keys.has(key)) return `duplicate key ${JSON.stringify(key)}`;
        keys.add(key);
        keyNext = false;
      }
      i = end;
    } else if (c === '{') {
      open.push(new Set());
      keyNext = true;
    } else if (c === '[') {
      open.push(null);
    } else if (c === '}' || c === ']') {
      open.pop();
    } else if (c === ',') {
      keyNext = open[open.length - 1] instanceof Set;
    } else if (c === '-' || (c >= '0' && c <= '9')) {
      let end = i + 1;
      while (end < text.length && /[0-9.eE+-]/.test(text[end]!)) end++;
      const literal = text.slice(i, end);
      if (!/^-?(?:0|[1-9][0-9]*)$/.test(literal) || !Number.isSafeInteger(Number(literal))) {
        return `number ${literal} is not an integer within ±(2^53 - 1)`;
      }
      i = end - 1;
    }
  }
  return null;
}
